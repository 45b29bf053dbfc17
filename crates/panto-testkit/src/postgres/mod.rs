//! A throwaway PostgreSQL server for tests and benchmarks, and fresh databases on it.
//!
//! [`start`] (and [`start_tls`]) start a server of one's own ([`Server`]); most tests want
//! [`server`] instead: the first call starts one server for the whole test binary (on
//! 127.0.0.1, a free port, trust authentication, a throwaway data directory that is removed
//! when the binary exits), and each test then takes a fresh database with
//! [`TestServer::create_database`], so tests never see each other's sessions.
//!
//! If PostgreSQL cannot be started, every test that asks for it fails with the reason: a test
//! suite that skips when there is no server proves nothing.
//!
//! Child processes that a test starts (to be a second writer) are given the server's address in
//! [`URL_ENV`] and use it instead of starting their own.

mod server;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

pub use server::{find_bindir, start, start_tls, Durability, Server, BINDIR_ENV};

/// The variable that hands a running server's base URL (no database name) to child processes.
pub const URL_ENV: &str = "PANTO_PG_TEST_URL";

/// The binary's server: one this binary started, or the one a parent process handed down.
#[derive(Debug)]
pub struct TestServer {
    /// `postgres://postgres@127.0.0.1:<port>`, without a database name.
    pub base_url: String,
    /// The server, when this process started it; it stops when the process exits.
    pub started: Option<Server>,
}

static SERVER: OnceLock<Result<TestServer, String>> = OnceLock::new();

/// The binary's server (started with fsync off on first use), or a panic saying why there is
/// none.
pub fn server() -> &'static TestServer {
    server_with(Durability::Fast)
}

/// The binary's server, started with `durability` if this is the first call.
pub fn server_with(durability: Durability) -> &'static TestServer {
    let server = SERVER.get_or_init(|| match std::env::var(URL_ENV) {
        Ok(base_url) => Ok(TestServer {
            base_url,
            started: None,
        }),
        Err(_) => start(durability).map(|server| TestServer {
            base_url: server.base_url.clone(),
            started: Some(server),
        }),
    });
    match server {
        Ok(server) => server,
        Err(reason) => panic!("PostgreSQL could not be started for the tests: {reason}"),
    }
}

impl TestServer {
    /// The URL of database `dbname` on this server.
    pub fn url(&self, dbname: &str) -> String {
        format!("{}/{dbname}", self.base_url)
    }

    /// Creates a fresh, empty database and returns its URL.
    pub async fn create_database(&self) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("t{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        self.admin()
            .await
            .batch_execute(&format!("create database {name}"))
            .await
            .unwrap_or_else(|e| panic!("creating database {name}: {e:?}"));
        self.url(&name)
    }

    /// A connection to the `postgres` database, as the superuser.
    pub async fn admin(&self) -> tokio_postgres::Client {
        connect(&self.url("postgres")).await
    }
}

/// A plain connection to `url`, for tests that look at the database directly.
pub async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e:?}"));
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}
