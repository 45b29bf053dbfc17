//! Search in PostgreSQL goes through the trigram indexes of schema version 4: the plan of a
//! text search over a table of many entries names them rather than scanning every row.

use panto_core::store::SearchQuery;
use panto_store_postgres::search_sql;
use panto_testkit::store_contract::{reply, user, Driver};

use super::common::{as_dyn, fresh_store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_search_uses_the_trigram_indexes() {
    let (store, url) = fresh_store().await;
    let dynamic = as_dyn(&store);
    let mut d = Driver::new(&dynamic, None);
    let ids = d.append(vec![user("find the okapi"), reply("an okapi it is")]).await;
    // A table of a few thousand entries, inserted by SQL (copies of the session's rows under
    // other ids), so the planner weighs an index against a real scan.
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(
            "insert into panto.sessions (id, created, modified, message_count)
                 select 'f' || lpad(n::text, 7, '0'), now(), now(), 1 from generate_series(1, 4000) n;
             insert into panto.entries (session_id, seq, id, ts, role, message)
                 select 'f' || lpad(n::text, 7, '0'), 0, 'aaaaaaaa', now(), 'user',
                        jsonb_build_object('role', 'user', 'content',
                            jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'filler text number ' || n)))
                 from generate_series(1, 4000) n;
             analyze panto.entries;",
        )
        .await
        .unwrap();

    for tools in [false, true] {
        let query = SearchQuery::text("OKAPI").with_tools(tools);
        let (sql, pattern) = search_sql(&query);
        let pattern = pattern.expect("a text search binds a pattern");
        let plan: Vec<String> = client
            .query(&format!("explain {sql}"), &[&pattern])
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let plan = plan.join("\n");
        assert!(plan.contains("entries_text_trgm_idx"), "tools {tools}: {plan}");
        assert_eq!(plan.contains("entries_tool_text_trgm_idx"), tools, "{plan}");
        assert!(!plan.contains("Seq Scan"), "tools {tools}: {plan}");
        let hits = dynamic.search(&query).await.unwrap();
        let entries: Vec<&str> = hits.iter().map(|h| h.entry.as_str()).collect();
        assert_eq!(entries, [ids[1].as_str(), ids[0].as_str()], "tools {tools}");
    }
}
