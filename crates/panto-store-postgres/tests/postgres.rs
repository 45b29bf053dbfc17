//! Tests of `PostgresStore` against a real PostgreSQL server that this test binary starts (see
//! `panto_testkit::postgres`): the shared contract suite, and what only a database store can get
//! wrong (locks across processes, fencing, migrations, transactions, provenance, import).

mod pg {
    pub mod common;

    mod atomicity;
    mod audit;
    mod contract;
    mod delete;
    mod group_commit;
    mod import;
    mod import_tree;
    mod locking;
    mod migrations;
    mod processes;
    mod redaction;
    mod search;
    mod tls;
    mod trace;
    mod tree;
    mod values;
}
