//! The test kit's error: bad test input, or a server that cannot start.

/// Everything that can go wrong in the test kit. None of it is retryable: each is a mistake in a
/// test's input or an environment that cannot run the mock server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A fixture cannot be served: its path leaves the fixtures directory, the file cannot be
    /// read, or its recorded metadata is malformed. Returned by [`fixture_bytes`](crate::fixture_bytes),
    /// [`Reply::try_fixture`](crate::Reply::try_fixture) and the [`spec`](crate::spec) functions.
    #[error("{0}")]
    Fixture(String),
    /// A JSON reply description or a named builder's arguments are not acceptable; the message
    /// names the reply and the key. Returned by the [`spec`](crate::spec) functions and
    /// [`build_named`](crate::script::build_named).
    #[error("{0}")]
    Spec(String),
    /// The mock server cannot listen on 127.0.0.1. Returned by
    /// [`MockServer::try_start`](crate::MockServer::try_start).
    #[error("{0}")]
    Listen(String),
    /// A recorded request's body is not JSON. Returned by
    /// [`RecordedRequest::json`](crate::RecordedRequest::json).
    #[error("{0}")]
    NotJson(String),
}
