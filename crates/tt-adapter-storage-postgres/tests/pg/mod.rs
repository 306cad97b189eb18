//! The PostgreSQL store's own tests, beside the shared contract suites.

mod follow;
pub(crate) mod ownership;
mod recovery;
mod restart;
mod store;

use std::sync::Arc;
use std::time::Duration;

use tt_adapter_storage_postgres::{PostgresOptions, PostgresStore};

/// A database `name` on the shared cluster: its URL.
pub(crate) async fn database(name: &str) -> String {
    crate::cluster().create_database(name).await.unwrap()
}

/// A plain client on `url`, for what a test writes or reads behind the store's back.
pub(crate) async fn sql_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// A store on `url` standing for host `name` (its owner id), holding runs for `lease`.
pub(crate) async fn host(url: &str, name: &str, lease: Duration) -> Arc<PostgresStore> {
    let options = PostgresOptions {
        pool_size: 2,
        lease,
        owner_id: Some(name.to_owned()),
    };
    Arc::new(PostgresStore::open_with(url, options).await.unwrap())
}

/// Two hosts, `host-a` and `host-b`, on a new database `name`, holding runs for `lease`: the
/// database's URL and the two stores.
pub(crate) async fn two_hosts(
    name: &str,
    lease: Duration,
) -> (String, Arc<PostgresStore>, Arc<PostgresStore>) {
    let url = database(name).await;
    let a = host(&url, "host-a", lease).await;
    let b = host(&url, "host-b", lease).await;
    (url, a, b)
}
