//! Connections, for plain HTTP and HTTPS alike: the accept loop with its connection limit, one
//! HTTP/1.1 connection with its header read timeout, and the bounded drain at shutdown.
//!
//! Slow clients are what this guards against. A connection that has not yet sent a complete
//! request (its headers, or its TLS handshake) is *unproven*: it is closed when the header
//! timeout runs out, and when every slot is taken a new connection evicts the oldest unproven
//! one, so a crowd of clients trickling headers can neither hold every slot nor make a normal
//! client wait behind them. Logs say what happened and how often, never who (no addresses).

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, oneshot, watch};
use tower::ServiceExt;

use crate::config::Settings;

/// The connection settings, from [`Settings`].
#[derive(Clone, Debug)]
pub struct Limits {
    /// Time to send complete request headers; `None`: unlimited.
    pub header_read_timeout: Option<Duration>,
    /// Connections open at once; `None`: unlimited.
    pub max_connections: Option<usize>,
    /// Longest graceful shutdown of the connections.
    pub drain: Duration,
}

impl Limits {
    pub fn from_settings(s: &Settings) -> Self {
        let secs = |x: f64| (x.is_finite() && x > 0.0).then(|| Duration::from_secs_f64(x));
        Self {
            header_read_timeout: secs(s.header_read_timeout_seconds),
            max_connections: (s.max_connections > 0).then_some(s.max_connections),
            drain: secs(s.shutdown_drain_seconds).unwrap_or(Duration::ZERO),
        }
    }
}

/// Counts slow-client events and logs them at most once a second per kind, so a flood of
/// slow connections cannot flood the log as well.
struct RateLog {
    pending: AtomicU64,
    last: Mutex<Option<Instant>>,
    what: &'static str,
}

impl RateLog {
    const fn new(what: &'static str) -> Self {
        Self {
            pending: AtomicU64::new(0),
            last: Mutex::new(None),
            what,
        }
    }

    fn note(&self) {
        crate::metrics::Metrics::global()
            .slow_clients
            .inc(&[self.what]);
        self.pending.fetch_add(1, Ordering::Relaxed);
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| t.elapsed() < Duration::from_secs(1)) {
            return;
        }
        *last = Some(Instant::now());
        let count = self.pending.swap(0, Ordering::Relaxed);
        tracing::warn!(event = self.what, count, "slow clients");
    }
}

/// A connection that sent no complete headers in time was closed.
static HEADER_TIMEOUTS: RateLog = RateLog::new("header_read_timeout");
/// A request body stalled longer than the body read timeout.
static BODY_TIMEOUTS: RateLog = RateLog::new("body_read_timeout");
/// An unproven connection was closed to make room for a new one.
static EVICTIONS: RateLog = RateLog::new("unproven_connection_evicted");
/// Every slot is held by a connection that has sent a request: new clients wait.
static LIMIT_REACHED: RateLog = RateLog::new("connection_limit_reached");

/// Notes a body read timeout (called by the body reader).
pub(crate) fn note_body_timeout() {
    BODY_TIMEOUTS.note();
}

#[derive(Default)]
struct SlotState {
    next_id: u64,
    live: HashSet<u64>,
    /// Unproven connections by age, with the sender that closes them.
    unproven: BTreeMap<u64, oneshot::Sender<()>>,
}

/// The connection slots.
struct Slots {
    max: Option<usize>,
    state: Mutex<SlotState>,
    freed: Notify,
}

impl Slots {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A slot for a new connection, evicting the oldest unproven one when all are taken;
    /// `None` when every slot holds a proven connection.
    fn try_take(self: &Arc<Self>) -> Option<Slot> {
        let mut s = self.lock();
        if let Some(max) = self.max
            && s.live.len() >= max
        {
            let (old, close) = s.unproven.pop_first()?;
            s.live.remove(&old);
            let _ = close.send(());
            EVICTIONS.note();
        }
        let id = s.next_id;
        s.next_id += 1;
        s.live.insert(id);
        let (tx, rx) = oneshot::channel();
        s.unproven.insert(id, tx);
        Some(Slot {
            slots: Arc::clone(self),
            id,
            evicted: Some(rx),
        })
    }
}

/// One connection's slot, released on drop.
pub struct Slot {
    slots: Arc<Slots>,
    id: u64,
    evicted: Option<oneshot::Receiver<()>>,
}

impl Slots {
    /// Connection `id` has sent a complete request: it is no longer evictable.
    fn prove(&self, id: u64) {
        self.lock().unproven.remove(&id);
    }

    fn is_unproven(&self, id: u64) -> bool {
        self.lock().unproven.contains_key(&id)
    }
}

impl Slot {
    /// Resolves when the slot was taken for a newer connection.
    async fn evicted(&mut self) {
        match self.evicted.as_mut() {
            // A dropped sender means proven (removed without sending): never resolves.
            Some(rx) => {
                if rx.await.is_err() {
                    self.evicted = None;
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut s = self.slots.lock();
        s.unproven.remove(&self.id);
        s.live.remove(&self.id);
        drop(s);
        self.slots.freed.notify_one();
    }
}

/// What a connection task gets besides its socket: its slot, the limits and the stop signal.
pub struct Conn {
    pub slot: Slot,
    pub limits: Arc<Limits>,
    stop: watch::Receiver<bool>,
}

/// Why a connection must stop what it is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// Shutdown has begun: finish in-flight work, take no more.
    Stop,
    /// The slot was taken for a newer connection: close now.
    Evicted,
}

impl Conn {
    /// Resolves when the connection is interrupted; with `draining`, only eviction counts
    /// (the stop was already seen).
    pub async fn interrupted(&mut self, draining: bool) -> Interrupt {
        tokio::select! {
            () = self.slot.evicted() => Interrupt::Evicted,
            _ = self.stop.wait_for(|s| *s), if !draining => Interrupt::Stop,
        }
    }
}

/// Accepts connections until `shutdown` resolves and hands each to `handle` in its own task;
/// then stops accepting, tells every connection to finish, and waits for them at most
/// `limits.drain`. Returns when they are all gone or the drain deadline has passed.
pub async fn accept_loop<F, Fut>(
    listener: TcpListener,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send,
    handle: F,
) -> std::io::Result<()>
where
    F: Fn(TcpStream, SocketAddr, Conn) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let limits = Arc::new(limits);
    let slots = Arc::new(Slots {
        max: limits.max_connections,
        state: Mutex::new(SlotState::default()),
        freed: Notify::new(),
    });
    // Every connection task holds a receiver; `closed()` on the sender tells when all are gone.
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut shutdown = pin!(shutdown);
    'accept: loop {
        let slot = loop {
            let freed = slots.freed.notified();
            if let Some(slot) = slots.try_take() {
                break slot;
            }
            LIMIT_REACHED.note();
            tokio::select! {
                biased;
                () = &mut shutdown => break 'accept,
                () = freed => {}
            }
        };
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((tcp, peer)) => {
                // Latency matters more than packet count for small JSON responses.
                let _ = tcp.set_nodelay(true);
                let conn = Conn {
                    slot,
                    limits: Arc::clone(&limits),
                    stop: stop_rx.clone(),
                };
                tokio::spawn(handle(tcp, peer, conn));
            }
            Err(err) if is_per_connection_error(&err) => {
                tracing::debug!(error = %err, "accept failed for one connection");
            }
            Err(err) => {
                // E.g. EMFILE: back off instead of spinning, but stay responsive to shutdown.
                tracing::warn!(error = %err, "accept failed; retrying in 1s");
                tokio::select! {
                    biased;
                    () = &mut shutdown => break,
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(stop_rx);
    if tokio::time::timeout(limits.drain, stop_tx.closed())
        .await
        .is_err()
    {
        let left = slots.lock().live.len();
        tracing::warn!(
            connections = left,
            drain_seconds = limits.drain.as_secs_f64(),
            "drain deadline passed; closing the connections still open"
        );
    }
    Ok(())
}

fn is_per_connection_error(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(
        err.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    )
}

/// Serves HTTP/1.1 on one connection (plain or after a TLS handshake) until the client closes
/// it, the header timeout closes it, it is evicted, or shutdown has drained it. `extend` adds
/// the connection's extensions to each request; `ConnectInfo` is always added.
pub async fn serve_http1<I>(
    io: I,
    peer: SocketAddr,
    app: Router,
    mut conn: Conn,
    extend: impl Fn(&mut http::Extensions) + Send + Sync + 'static,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let slots = Arc::clone(&conn.slot.slots);
    let id = conn.slot.id;
    let service_slots = Arc::clone(&slots);
    let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
        service_slots.prove(id);
        let ext = req.extensions_mut();
        ext.insert(ConnectInfo(peer));
        extend(ext);
        // Router is always ready and its error type is Infallible.
        app.clone().oneshot(req)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(conn.limits.header_read_timeout);
    let served = builder.serve_connection(TokioIo::new(io), service);
    let mut served = pin!(served);
    let mut draining = false;
    loop {
        tokio::select! {
            res = served.as_mut() => {
                if let Err(err) = res {
                    // The header timer also runs while a keep-alive connection idles between
                    // requests: closing one that has sent requests is routine, not a slow client.
                    if err.is_timeout() && slots.is_unproven(id) {
                        HEADER_TIMEOUTS.note();
                    } else if err.is_timeout() {
                        tracing::debug!("idle keep-alive connection closed");
                    } else {
                        tracing::debug!(error = %err, "connection ended with error");
                    }
                }
                break;
            }
            why = conn.interrupted(draining) => match why {
                Interrupt::Evicted => break,
                Interrupt::Stop => {
                    draining = true;
                    served.as_mut().graceful_shutdown();
                }
            },
        }
    }
}

impl Slot {
    /// Marks the connection proven without a request (tests of the slot logic).
    #[cfg(test)]
    fn prove_now(&self) {
        self.slots.prove(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(max: usize) -> Arc<Slots> {
        Arc::new(Slots {
            max: Some(max),
            state: Mutex::new(SlotState::default()),
            freed: Notify::new(),
        })
    }

    #[tokio::test]
    async fn a_full_house_evicts_the_oldest_unproven_connection() {
        let s = slots(2);
        let mut a = s.try_take().expect("slot a");
        let b = s.try_take().expect("slot b");
        b.prove_now();
        // Full: the oldest unproven (a) makes room for c.
        let c = s.try_take().expect("slot c");
        tokio::time::timeout(Duration::from_secs(1), a.evicted())
            .await
            .expect("a is evicted");
        c.prove_now();
        // Full of proven connections: nothing to evict.
        assert!(s.try_take().is_none());
        drop(b);
        assert!(s.try_take().is_some());
        drop(a);
    }

    #[tokio::test]
    async fn a_proven_connection_is_never_evicted() {
        let s = slots(1);
        let mut a = s.try_take().expect("slot a");
        a.prove_now();
        assert!(s.try_take().is_none());
        assert!(
            tokio::time::timeout(Duration::from_millis(50), a.evicted())
                .await
                .is_err()
        );
    }
}
