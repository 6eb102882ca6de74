//! Serving a router over HTTP/1.1 with bounds a hostile client cannot outlast: a request's
//! header must arrive within [`Limits::header_timeout`] and its body within
//! [`Limits::body_timeout`]; at most [`Limits::max_connections`] connections are open, at most
//! [`Limits::max_connections_per_client`] from one address. A connection past a bound makes
//! room by closing the connection that has waited longest without a request in progress (a
//! client that sent half a header, or an idle keep-alive); when every connection is busy, the
//! new one is closed. So a flood of stalled clients cannot keep `/healthz` from answering.
//!
//! A stop (the `stop` future resolving) stops accepting, closes at once every connection with
//! no request in progress, cuts request bodies still arriving, lets the requests in flight
//! answer for up to [`Limits::stop_grace`], and returns.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt as _;

use crate::bodies::{DeadlineBody, Guarded};

/// The bounds of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Open connections in all (4,096).
    pub max_connections: usize,
    /// Open connections from one IP address (1,024).
    pub max_connections_per_client: usize,
    /// From a connection's first byte (or the end of its last answer) to the end of a request's
    /// header (10 s); also how long an idle keep-alive connection stays open.
    pub header_timeout: Duration,
    /// From a request's header to the end of its body (30 s).
    pub body_timeout: Duration,
    /// How long a stop waits for the requests in flight (30 s).
    pub stop_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 4096,
            max_connections_per_client: 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            stop_grace: Duration::from_secs(30),
        }
    }
}

/// One open connection as the server tracks it.
#[derive(Debug)]
struct Connection {
    ip: IpAddr,
    /// Requests in progress (their answers not yet sent).
    busy: AtomicUsize,
    /// When it last became idle, as [`idle_order`] counts.
    idle_since: AtomicU64,
    close: CancellationToken,
}

/// Counts a request in progress on its connection until dropped.
#[derive(Debug)]
struct Busy {
    connection: Arc<Connection>,
}

impl Busy {
    fn new(connection: &Arc<Connection>) -> Self {
        connection.busy.fetch_add(1, Ordering::AcqRel);
        Self { connection: Arc::clone(connection) }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.connection.idle_since.store(idle_order(), Ordering::Release);
        self.connection.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The order in which connections became idle: a counter, so two connections that became idle
/// within the same instant still have an order.
static IDLE_ORDER: AtomicU64 = AtomicU64::new(0);

fn idle_order() -> u64 {
    IDLE_ORDER.fetch_add(1, Ordering::Relaxed)
}

/// The open connections.
#[derive(Debug, Default)]
struct Connections {
    open: Mutex<HashMap<u64, Arc<Connection>>>,
    next: AtomicU64,
}

impl Connections {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Arc<Connection>>> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Admits a connection from `ip`, closing the longest-idle one in the way of a bound;
    /// `None` when every connection in the way is busy.
    fn admit(&self, ip: IpAddr, limits: &Limits) -> Option<(u64, Arc<Connection>)> {
        let mut open = self.lock();
        let from_client = open.values().filter(|c| c.ip == ip).count();
        if from_client >= limits.max_connections_per_client {
            Self::close_longest_idle(&mut open, Some(ip))?;
        } else if open.len() >= limits.max_connections {
            Self::close_longest_idle(&mut open, None)?;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection {
            ip,
            busy: AtomicUsize::new(0),
            idle_since: AtomicU64::new(idle_order()),
            close: CancellationToken::new(),
        });
        open.insert(id, Arc::clone(&connection));
        Some((id, connection))
    }

    fn close_longest_idle(open: &mut HashMap<u64, Arc<Connection>>, ip: Option<IpAddr>) -> Option<()> {
        let (id, _) = open
            .iter()
            .filter(|(_, c)| ip.is_none_or(|ip| c.ip == ip) && c.busy.load(Ordering::Acquire) == 0)
            .min_by_key(|(_, c)| c.idle_since.load(Ordering::Acquire))?;
        let id = *id;
        if let Some(closed) = open.remove(&id) {
            closed.close.cancel();
        }
        Some(())
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Closes every connection with no request in progress.
    fn close_idle(&self) {
        for connection in self.lock().values() {
            if connection.busy.load(Ordering::Acquire) == 0 {
                connection.close.cancel();
            }
        }
    }
}

/// Serves `router` on `listener` within `limits` until `stop` resolves (see the module's
/// documentation). A request carries its peer's address as [`ConnectInfo<SocketAddr>`].
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    stop: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    serve_with(listener, router, limits, None, stop).await
}

/// [`serve`] over TLS: each connection's handshake must end within the header deadline.
pub async fn serve_tls(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    tls: crate::Tls,
    stop: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    serve_with(listener, router, limits, Some(tls), stop).await
}

async fn serve_with(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    tls: Option<crate::Tls>,
    stop: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let connections = Arc::new(Connections::default());
    let stopping = CancellationToken::new();
    let tasks = TaskTracker::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // the listener itself is fine; wait a little instead of spinning.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some((id, connection)) = connections.admit(peer.ip(), &limits) else {
            tracing::warn!(client = %peer.ip(), "refusing a connection: every open connection is busy");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = Service { router: router.clone(), limits, stopping: stopping.clone(), connection, peer };
        let connections = Arc::clone(&connections);
        let tls = tls.clone();
        tasks.spawn(async move {
            match tls {
                None => service.run(stream).await,
                Some(tls) => {
                    let close = service.connection.close.clone();
                    let handshake = tokio::time::timeout(limits.header_timeout, tls.0.accept(stream));
                    tokio::select! {
                        done = handshake => match done {
                            Ok(Ok(stream)) => service.run(stream).await,
                            Ok(Err(error)) => tracing::debug!(%error, client = %peer.ip(), "TLS handshake failed"),
                            Err(_) => tracing::debug!(client = %peer.ip(), "TLS handshake too slow"),
                        },
                        () = close.cancelled() => {}
                    }
                }
            }
            connections.remove(id);
        });
    }
    stopping.cancel();
    connections.close_idle();
    tasks.close();
    if tokio::time::timeout(limits.stop_grace, tasks.wait()).await.is_err() {
        tracing::warn!(open = tasks.len(), "stopping: requests still in progress after the grace period are cut");
    }
    Ok(())
}

/// One connection's service.
struct Service {
    router: Router,
    limits: Limits,
    stopping: CancellationToken,
    connection: Arc<Connection>,
    peer: SocketAddr,
}

impl Service {
    async fn run<S>(self, stream: S)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let close = self.connection.close.clone();
        let stopping = self.stopping.clone();
        let limits = self.limits;
        let this = Arc::new(self);
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let this = Arc::clone(&this);
            async move { this.call(request).await }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout).keep_alive(true);
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let mut connection = std::pin::pin!(connection);
        tokio::select! {
            _ = connection.as_mut() => return,
            () = close.cancelled() => return,
            () = stopping.cancelled() => connection.as_mut().graceful_shutdown(),
        }
        tokio::select! {
            _ = connection.as_mut() => {}
            () = close.cancelled() => {}
        }
    }

    async fn call(&self, request: hyper::Request<Incoming>) -> Result<hyper::Response<Body>, std::convert::Infallible> {
        let busy = Busy::new(&self.connection);
        let mut request =
            request.map(|body| Body::new(DeadlineBody::new(body, self.limits.body_timeout, self.stopping.clone())));
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let response = self.router.clone().oneshot(request).await?;
        Ok(response.map(|body| Body::new(Guarded { inner: body, _guard: busy })))
    }
}
