//! The two body wrappers of [`crate::serve`]: a request body that must arrive whole before a
//! deadline (and is cut when the server stops), and a response body that keeps its connection
//! counted as busy until it has been sent.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Why a request body was cut short.
#[derive(Debug, thiserror::Error)]
pub enum BodyCut {
    #[error("the request body did not arrive within {0:?}")]
    TooSlow(Duration),
    #[error("the server is stopping and the request body had not arrived")]
    Stopping,
}

impl BodyCut {
    /// The cut behind `error`, anywhere in its chain of causes (a body error reaches a handler
    /// wrapped by the layers it went through).
    pub fn in_chain<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Self> {
        let mut cause = Some(error);
        while let Some(current) = cause {
            if let Some(cut) = current.downcast_ref::<Self>() {
                return Some(cut);
            }
            cause = current.source();
        }
        None
    }
}

/// A request body with a deadline for the whole of it. The timer and the stop watch are set up
/// only when the body is not there at the first read, so a body that came with its header
/// costs nothing more.
pub(crate) struct DeadlineBody {
    inner: Incoming,
    started: Instant,
    limit: Duration,
    stop: CancellationToken,
    waiting: Option<Waiting>,
}

/// What a body that is not there yet waits on: its deadline, and the server's stop.
type Waiting = (Pin<Box<Sleep>>, Pin<Box<WaitForCancellationFutureOwned>>);

impl DeadlineBody {
    pub(crate) fn new(inner: Incoming, limit: Duration, stop: CancellationToken) -> Self {
        Self { inner, started: Instant::now(), limit, stop, waiting: None }
    }
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|result| result.map_err(Into::into)));
        }
        let (deadline, stopped) = this.waiting.get_or_insert_with(|| {
            (
                Box::pin(tokio::time::sleep_until(this.started + this.limit)),
                Box::pin(this.stop.clone().cancelled_owned()),
            )
        });
        if deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(BodyCut::TooSlow(this.limit).into())));
        }
        if stopped.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(BodyCut::Stopping.into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body holding `guard` until it is dropped (sent, or the connection gone).
pub(crate) struct Guarded<G> {
    pub(crate) inner: Body,
    pub(crate) _guard: G,
}

impl<G: Unpin + Send + 'static> HttpBody for Guarded<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
