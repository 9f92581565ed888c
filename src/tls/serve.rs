//! HTTPS: a TLS handshake per connection, then HTTP/1.1 with the limits of `crate::listen`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::listen::{Conn, Limits, accept_loop, serve_http1};

use super::config::TlsServer;
use super::identity::ClientIdentity;

/// Upper bound for a TLS handshake, so idle or slow peers cannot pin tasks and sockets.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `app` over TLS on `listener` until `shutdown` resolves, with the connection
/// limits of [`crate::listen`] (slots, header read timeout, bounded drain).
///
/// Each connection runs in its own task, so a failed or stalled handshake never
/// affects other clients. Every request carries `ConnectInfo<SocketAddr>` and, when
/// the client presented a verified certificate, `Arc<ClientIdentity>` and
/// [`CertPrincipal`](super::CertPrincipal) as extensions.
///
/// On shutdown the listener is closed, pending handshakes are abandoned, idle
/// keep-alive connections are closed and in-flight requests are allowed to finish
/// until the drain deadline.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    server: Arc<TlsServer>,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let acceptor = TlsAcceptor::from(server.rustls_config());
    accept_loop(listener, limits, shutdown, move |tcp, peer, conn| {
        handle_connection(
            tcp,
            peer,
            acceptor.clone(),
            app.clone(),
            Arc::clone(&server),
            conn,
        )
    })
    .await
}

async fn handle_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    app: Router,
    server: Arc<TlsServer>,
    mut conn: Conn,
) {
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp));
    let tls = tokio::select! {
        res = handshake => match res {
            Ok(Ok(tls)) => tls,
            Ok(Err(_)) => {
                let failures = server.record_handshake_failure();
                tracing::debug!(failures, reason = "tls_error", "TLS handshake failed");
                return;
            }
            Err(_) => {
                let failures = server.record_handshake_failure();
                tracing::debug!(failures, reason = "timeout", "TLS handshake failed");
                return;
            }
        },
        _ = conn.interrupted(false) => return,
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
    serve_http1(tls, peer, app, conn, move |ext| {
        if let Some(identity) = &identity {
            ext.insert(Arc::clone(identity));
        }
        if let Some(principal) = &principal {
            ext.insert(principal.clone());
        }
    })
    .await;
}
