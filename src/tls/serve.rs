//! Accept loop: TLS handshake per connection, HTTP/1.1 via hyper, graceful shutdown.

use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use super::config::TlsServer;
use super::identity::ClientIdentity;

/// Upper bound for a TLS handshake, so idle or slow peers cannot pin tasks and sockets.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Time allowed for a client to send complete request headers (slowloris guard).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `app` over TLS on `listener` until `shutdown` resolves.
///
/// Each connection runs in its own task, so a failed or stalled handshake never
/// affects other clients. Every request carries `ConnectInfo<SocketAddr>` and, when
/// the client presented a verified certificate, `Arc<ClientIdentity>` and
/// [`CertPrincipal`](super::CertPrincipal) as extensions.
///
/// On shutdown the listener is closed, pending handshakes are abandoned, idle
/// keep-alive connections are closed and in-flight requests are allowed to finish;
/// the function returns once every connection task has ended.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    server: Arc<TlsServer>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let acceptor = TlsAcceptor::from(server.rustls_config());
    // Every connection task holds a receiver; `closed()` on the sender then tells us
    // when all of them are gone.
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut shutdown = pin!(shutdown);

    loop {
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((tcp, peer)) => {
                // Latency matters more than packet count for small JSON responses.
                let _ = tcp.set_nodelay(true);
                tokio::spawn(handle_connection(
                    tcp,
                    peer,
                    acceptor.clone(),
                    app.clone(),
                    Arc::clone(&server),
                    stop_rx.clone(),
                ));
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
    stop_tx.closed().await;
    Ok(())
}

fn is_per_connection_error(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(
        err.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    )
}

/// Resolves once shutdown has been signalled (or the signaller is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

async fn handle_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    app: Router,
    server: Arc<TlsServer>,
    mut stop: watch::Receiver<bool>,
) {
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp));
    let tls = tokio::select! {
        res = handshake => match res {
            Ok(Ok(tls)) => tls,
            Ok(Err(_)) => {
                let failures = server.record_handshake_failure();
                tracing::debug!(%peer, failures, reason = "tls_error", "TLS handshake failed");
                return;
            }
            Err(_) => {
                let failures = server.record_handshake_failure();
                tracing::debug!(%peer, failures, reason = "timeout", "TLS handshake failed");
                return;
            }
        },
        () = stopped(&mut stop) => return,
    };

    // rustls only exposes peer certificates after the verifier accepted them, so a
    // present leaf is a verified one.
    let identity = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|leaf| Arc::new(ClientIdentity::from_der(leaf.as_ref())));
    let principal = identity.as_deref().map(|id| server.principal_for(id));

    let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
        let ext = req.extensions_mut();
        ext.insert(ConnectInfo(peer));
        if let Some(identity) = &identity {
            ext.insert(Arc::clone(identity));
        }
        if let Some(principal) = &principal {
            ext.insert(principal.clone());
        }
        // Router is always ready and its error type is Infallible.
        app.clone().oneshot(req)
    });

    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let mut conn = pin!(builder.serve_connection(TokioIo::new(tls), service));

    let mut draining = false;
    loop {
        tokio::select! {
            res = conn.as_mut() => {
                if let Err(err) = res {
                    tracing::debug!(%peer, error = %err, "connection ended with error");
                }
                break;
            }
            () = stopped(&mut stop), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}
