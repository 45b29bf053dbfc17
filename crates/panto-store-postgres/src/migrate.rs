//! Versioned schema migrations, embedded in the binary and applied on connect.
//!
//! `panto.schema_migrations` records each applied version. Applying is idempotent (a version
//! already recorded is skipped) and safe when many processes connect at once: they take turns
//! through an advisory lock, so one applies and the others find the work done. Each migration
//! and its record commit in one transaction.

use panto_core::{Error, Result};
use tokio_postgres::Client;

use crate::db::pg;
use crate::lock::migration_lock_key;

/// One schema version.
pub(crate) struct Migration {
    /// The version number, from 1 up without gaps.
    pub version: i32,
    /// A short name, recorded with it.
    pub name: &'static str,
    /// The SQL that takes the schema from the previous version to this one.
    pub sql: &'static str,
}

/// Every schema version this build knows, oldest first.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "initial",
        sql: include_str!("../migrations/0001_initial.sql"),
    },
    Migration {
        version: 2,
        name: "session tree",
        sql: include_str!("../migrations/0002_session_tree.sql"),
    },
    Migration {
        version: 3,
        name: "delete checkpoints with their session",
        sql: include_str!("../migrations/0003_delete_checkpoints.sql"),
    },
    Migration {
        version: 4,
        name: "search indexes",
        sql: include_str!("../migrations/0004_search.sql"),
    },
];

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: i32 = 4;

/// Brings the schema to [`SCHEMA_VERSION`]. Holds the migration lock while it works.
pub(crate) async fn migrate(client: &mut Client) -> Result<()> {
    let key = migration_lock_key();
    client
        .execute("select pg_advisory_lock($1)", &[&key])
        .await
        .map_err(|e| pg("waiting for the schema migration lock", e))?;
    let result = apply(client).await;
    // On error the caller drops this connection, which releases the lock too; unlocking here
    // keeps the lock's life obvious on success.
    let unlocked = client.execute("select pg_advisory_unlock($1)", &[&key]).await;
    result?;
    unlocked.map_err(|e| pg("releasing the schema migration lock", e))?;
    Ok(())
}

async fn apply(client: &mut Client) -> Result<()> {
    // Existence is checked before creating: `create ... if not exists` still demands the
    // privilege to create, which a role given a ready-made schema may lack.
    let row = client
        .query_one(
            "select exists (select 1 from pg_namespace where nspname = 'panto'), \
                    to_regclass('panto.schema_migrations') is not null",
            &[],
        )
        .await
        .map_err(|e| pg("reading the panto schema", e))?;
    let (schema_exists, table_exists): (bool, bool) = (row.get(0), row.get(1));
    if !schema_exists {
        client
            .batch_execute("create schema if not exists panto")
            .await
            .map_err(|e| pg("creating the schema `panto`", e))?;
    }
    if !table_exists {
        client
            .batch_execute(
                "create table if not exists panto.schema_migrations (
                    version    integer primary key,
                    name       text not null,
                    applied_at timestamptz not null default now()
                )",
            )
            .await
            .map_err(|e| pg("creating panto.schema_migrations", e))?;
    }
    let applied: Vec<i32> = client
        .query("select version from panto.schema_migrations order by version", &[])
        .await
        .map_err(|e| pg("reading panto.schema_migrations", e))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if let Some(&newest) = applied.last() {
        if newest > SCHEMA_VERSION {
            return Err(Error::store(
                "checking the database schema",
                format!(
                    "the database's panto schema is at version {newest}, newer than this panto knows \
                     (up to {SCHEMA_VERSION}); upgrade panto"
                ),
            ));
        }
    }
    for m in MIGRATIONS.iter().filter(|m| !applied.contains(&m.version)) {
        let context = format!("applying schema migration {} ({})", m.version, m.name);
        let txn = client.transaction().await.map_err(|e| pg(context.clone(), e))?;
        txn.batch_execute(m.sql).await.map_err(|e| pg(context.clone(), e))?;
        txn.execute(
            "insert into panto.schema_migrations (version, name) values ($1, $2)",
            &[&m.version, &m.name],
        )
        .await
        .map_err(|e| pg(context.clone(), e))?;
        txn.commit().await.map_err(|e| pg(context, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_count_up_from_one_without_gaps() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1, "migration {}", m.name);
        }
        assert_eq!(MIGRATIONS.last().map(|m| m.version), Some(SCHEMA_VERSION));
    }
}
