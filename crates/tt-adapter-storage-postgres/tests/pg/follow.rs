//! Following from another host: a store that did not write a run hears its appends when they
//! commit (LISTEN/NOTIFY), so `wait_for_append` returns long before its timeout.

use std::time::Duration;

use tt_adapter_storage_postgres::PostgresStore;
use tt_ports::{AgentRunRepository, EventPage, RunJournal};
use tt_testkit::contract::{manifest_for, sample_run, tool_event};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_on_another_store_hears_appends_as_they_commit() {
    let url = super::database("tt_case_follow").await;
    let writer = PostgresStore::open(&url).await.unwrap();
    let follower = PostgresStore::open(&url).await.unwrap();
    let run = sample_run(1);
    writer.create_run(&run, &manifest_for(&run)).await.unwrap();

    for n in 1..=3u64 {
        let wait = follower.wait_for_append(&run.id, n - 1, Duration::from_secs(120));
        let append = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            writer
                .append(tool_event(&run.id, n, "inv_root"))
                .await
                .unwrap();
        };
        // Far below the wait's own timeout: the notification woke it.
        tokio::time::timeout(Duration::from_secs(30), async {
            tokio::join!(wait, append)
        })
        .await
        .expect("the follower heard the append");
        let page = EventPage {
            after_seq: Some(n - 1),
            ..EventPage::default()
        };
        let events = follower.read(&run.id, &page).await.unwrap();
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![n]);
    }
}
