//! One-statement units: a query or statement on a pooled connection (its plan cached), tried
//! again over a server restart (`retry.rs`), a failure naming what was being read or written.
//! A unit that reads before it writes, or writes under a run's fence, keeps its own steps.

use serde::de::DeserializeOwned;
use tokio_postgres::Row;
use tt_ports::StorageResult;

use crate::PostgresStore;
use crate::error::{io, parse};
use crate::pool::Params;
use crate::retry::retrying;

impl PostgresStore {
    /// The rows `sql` returns, retried over a server restart; a failure names `what`.
    pub(crate) async fn rows(
        &self,
        sql: &str,
        params: Params<'_>,
        what: &str,
    ) -> StorageResult<Vec<Row>> {
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            conn.query(sql, params).await.map_err(io(what))
        })
        .await
    }

    /// The row `sql` returns, if any, retried over a server restart; a failure names `what`.
    pub(crate) async fn row(
        &self,
        sql: &str,
        params: Params<'_>,
        what: &str,
    ) -> StorageResult<Option<Row>> {
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            conn.query_opt(sql, params).await.map_err(io(what))
        })
        .await
    }

    /// The one row `sql` must return, retried over a server restart; a failure names `what`.
    pub(crate) async fn one_row(
        &self,
        sql: &str,
        params: Params<'_>,
        what: &str,
    ) -> StorageResult<Row> {
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            conn.query_one(sql, params).await.map_err(io(what))
        })
        .await
    }

    /// How many rows the statement `sql` touched, retried over a server restart (so it must
    /// be one a second try may repeat, e.g. an upsert or a delete); a failure names `what`.
    pub(crate) async fn affected(
        &self,
        sql: &str,
        params: Params<'_>,
        what: &str,
    ) -> StorageResult<u64> {
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            conn.execute(sql, params).await.map_err(io(what))
        })
        .await
    }

    /// The JSON text in the first column of the row `sql` returns, if any, parsed (`Corrupt`
    /// when it does not); a failure of either names `what`.
    pub(crate) async fn document<T: DeserializeOwned>(
        &self,
        sql: &str,
        params: Params<'_>,
        what: &str,
    ) -> StorageResult<Option<T>> {
        self.row(sql, params, what)
            .await?
            .map(|row| parse(what, row.get(0)))
            .transpose()
    }
}
