//! A panic boundary around one unit of work an actor runs (a scheduled job,
//! a recovery pass). Without it the panic unwinds through the actor's task
//! and kills the actor with everything else it was doing.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;

/// Runs `work` (built inside the boundary, so a panic while building the
/// future is caught too) and returns its output, or the panic's message.
pub async fn guarded<T, F, Fut>(work: F) -> Result<T, String>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = T>,
{
    // Unwind safety: the work keeps its state in the store, which it reads
    // again on its next run; the actor's own state is not touched by it.
    AssertUnwindSafe(async move { work().await })
        .catch_unwind()
        .await
        .map_err(|payload| message(payload.as_ref()))
}

fn message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn output_or_panic_message() {
        assert_eq!(guarded(|| async { 3 }).await, Ok(3));
        #[allow(clippy::panic)]
        let caught = guarded(|| async { panic!("late {}", 1) }).await;
        assert_eq!(caught, Err::<(), _>("late 1".to_string()));
        #[allow(clippy::panic)]
        let early = guarded(|| -> std::future::Ready<()> { panic!("early") }).await;
        assert_eq!(early, Err("early".to_string()));
    }
}
