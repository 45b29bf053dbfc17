//! A small connection pool: at most `size` connections, each with its prepared statements.
//!
//! Small on purpose: the store needs only "borrow a connection, run a transaction, give it
//! back", and a pool crate would add more build time than this file has lines.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use panto_core::{Error, Result};
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{Client, Config, NoTls, Socket, Statement};

use crate::db::PgError;
use crate::tls::Target;

/// How long a connection attempt may take when the connection string does not say.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Run on every connection the store opens: its prepared statements run with generic plans,
/// which find rows by their keys.
///
/// PostgreSQL plans a prepared statement anew on each execution while a plan made for the
/// parameters' values looks cheaper than a generic one, and for the append statement (data-
/// modifying CTEs over parameter arrays, `append_sql.rs`) it always does: the array lengths make
/// every custom plan's estimate smaller, so each append would be planned again, and planning
/// would be most of the server's CPU per append (docs/performance-log.md). Every statement of the store has the same best
/// plan whatever its parameters (equality and range conditions on keys, the id prefix as a
/// range), so the generic plan costs nothing. The setting is the connection's own; it exists
/// from PostgreSQL 12 on, and an older server is left as it is.
///
/// A generic plan is made once per connection, with the table sizes of that moment. The append
/// statement joins the sessions of a batch to `panto.sessions`; planned while the table was
/// small (a new database), the join would scan the whole table, and keep doing so in every
/// append as the table grew. Every statement of the store reads by key, so sequential scans are turned
/// off for its connections (a statement with no index to use still scans; this only takes the
/// scan out of the planner's choices where an index serves).
const PLANNER_SETTINGS: &str = "select set_config('plan_cache_mode', 'force_generic_plan', false) \
     where current_setting('server_version_num')::int >= 120000; \
     select set_config('enable_seqscan', 'off', false)";

/// One connection and the statements prepared on it.
pub(crate) struct Conn {
    /// The client.
    pub client: Client,
    /// Prepared statements by their SQL text. Preparing costs a round trip; the store runs the
    /// same few statements over and over.
    statements: HashMap<&'static str, Statement>,
}

impl Conn {
    /// Opens a connection (over TLS when `target` says so) and runs its I/O task on the current
    /// runtime.
    pub(crate) async fn connect(target: &Target) -> Result<Conn> {
        let mut config = target.config.clone();
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        let opened = match &target.tls {
            None => open(&config, NoTls).await,
            Some(tls) => open(&config, tls.clone()).await,
        };
        let client = opened.map_err(|e| {
            let e = PgError::new(e);
            // The two TLS mistakes everyone makes once, answered where they show.
            let shown = e.to_string();
            let hint = if shown.contains("UnknownIssuer") {
                " (the server's certificate is not signed by a CA panto trusts: name the CA's PEM file with sslrootcert=FILE)"
            } else if target.tls.is_none() && (shown.contains("no encryption") || shown.contains("SSL off")) {
                " (the server takes only TLS connections: add sslmode=require)"
            } else {
                ""
            };
            Error::store(format!("connecting to PostgreSQL at {}{hint}", describe(&config)), e)
        })?;
        client.batch_execute(PLANNER_SETTINGS).await.map_err(|e| {
            Error::store(
                format!("setting up the connection to {}", describe(&config)),
                PgError::new(e),
            )
        })?;
        Ok(Conn {
            client,
            statements: HashMap::new(),
        })
    }

    /// The prepared statement for `sql`, preparing it on first use.
    pub(crate) async fn statement(&mut self, sql: &'static str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).await?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }
}

/// Connects with `tls` and runs the connection's I/O task on the current runtime. The task ends
/// when the client is dropped or the server goes away; either way every query on the client
/// then fails with the reason, so its result is not needed.
async fn open<T>(config: &Config, tls: T) -> std::result::Result<Client, tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket>,
    T::Stream: Send + 'static,
{
    let (client, connection) = config.connect(tls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// Where a configuration points, for messages: hosts, ports, database and user, never the
/// password.
pub(crate) fn describe(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    format!(
        "host={} port={} dbname={} user={}",
        if hosts.is_empty() {
            "localhost".to_owned()
        } else {
            hosts.join(",")
        },
        if ports.is_empty() {
            "5432".to_owned()
        } else {
            ports.join(",")
        },
        config.get_dbname().unwrap_or("(default)"),
        config.get_user().unwrap_or("(default)"),
    )
}

/// The pool.
pub(crate) struct Pool {
    target: Target,
    idle: Mutex<Vec<Conn>>,
    permits: Semaphore,
}

impl Pool {
    /// A pool of at most `size` connections to `config`; connections open on demand.
    pub(crate) fn new(target: Target, size: usize) -> Self {
        Pool {
            target,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(size.max(1)),
        }
    }

    /// Puts an already open connection in the pool.
    pub(crate) fn put(&self, conn: Conn) {
        lock(&self.idle).push(conn);
    }

    /// A connection: an idle one that is still open, else a new one. Waits while `size`
    /// connections are out.
    pub(crate) async fn get(&self) -> Result<Pooled<'_>> {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| panto_core::Error::store("waiting for a PostgreSQL connection", e))?;
        loop {
            let conn = lock(&self.idle).pop();
            match conn {
                Some(conn) if conn.client.is_closed() => continue,
                Some(conn) => {
                    return Ok(Pooled {
                        pool: self,
                        conn: Some(conn),
                        _permit: permit,
                    })
                }
                None => break,
            }
        }
        let conn = Conn::connect(&self.target).await?;
        Ok(Pooled {
            pool: self,
            conn: Some(conn),
            _permit: permit,
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The idle list is plain data a panic cannot leave half-updated.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A connection borrowed from the pool; it goes back when dropped, unless it has closed.
///
/// A transaction left open by a cancelled future is rolled back by tokio-postgres before the
/// connection runs anything else, so a returned connection is always outside a transaction.
pub(crate) struct Pooled<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
    _permit: SemaphorePermit<'a>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        // Always `Some` until drop.
        self.conn
            .as_ref()
            .unwrap_or_else(|| unreachable!("a pooled connection is present until drop"))
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn
            .as_mut()
            .unwrap_or_else(|| unreachable!("a pooled connection is present until drop"))
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if !conn.client.is_closed() {
                self.pool.put(conn);
            }
        }
    }
}
