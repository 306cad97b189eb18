//! The documents kept one row per name (profiles, MCP servers, connections): a table whose key
//! column names a JSON or text `body`, listed, read, upserted and deleted alike. Each table
//! states its statements once, as constants, through [`named_rows!`].

use serde::de::DeserializeOwned;
use tt_ports::StorageResult;

use crate::PostgresStore;

/// The statements of one table of named documents, and what its failures call one.
pub(crate) struct NamedRows {
    /// The keys in order.
    pub(crate) select_names: &'static str,
    /// Every body, in the keys' order.
    pub(crate) select_bodies: &'static str,
    /// The body under `$1`.
    pub(crate) select_body: &'static str,
    /// `$2` stored under `$1`, replacing any body there (an upsert, so a retried try writes
    /// the same row again).
    pub(crate) upsert: &'static str,
    /// The row under `$1` removed.
    pub(crate) delete: &'static str,
    /// What one row is, for messages: `profile`, `MCP server`, `connection`.
    pub(crate) what: &'static str,
    /// What the whole table is, for messages: `the profiles`.
    pub(crate) what_all: &'static str,
}

/// A [`NamedRows`] for `table` keyed by `key`; `on_update` is what an upsert sets besides the
/// body (`""`, or `, updated_at = clock_timestamp()` for a table that stamps its rows).
macro_rules! named_rows {
    ($table:literal, $key:literal, $on_update:literal, $what:literal, $what_all:literal) => {
        $crate::named_rows::NamedRows {
            select_names: concat!("SELECT ", $key, " FROM ", $table, " ORDER BY ", $key),
            select_bodies: concat!("SELECT body FROM ", $table, " ORDER BY ", $key),
            select_body: concat!("SELECT body FROM ", $table, " WHERE ", $key, " = $1"),
            upsert: concat!(
                "INSERT INTO ",
                $table,
                " (",
                $key,
                ", body) VALUES ($1, $2) ON CONFLICT (",
                $key,
                ") DO UPDATE SET body = EXCLUDED.body",
                $on_update
            ),
            delete: concat!("DELETE FROM ", $table, " WHERE ", $key, " = $1"),
            what: $what,
            what_all: $what_all,
        }
    };
}
pub(crate) use named_rows;

impl PostgresStore {
    /// Every key of `table`, in order.
    pub(crate) async fn named_keys(&self, table: &NamedRows) -> StorageResult<Vec<String>> {
        let rows = self.rows(table.select_names, &[], table.what_all).await?;
        Ok(rows.iter().map(|row| row.get::<_, String>(0)).collect())
    }

    /// Every body of `table`, in its keys' order.
    pub(crate) async fn named_bodies(&self, table: &NamedRows) -> StorageResult<Vec<String>> {
        let rows = self.rows(table.select_bodies, &[], table.what_all).await?;
        Ok(rows.iter().map(|row| row.get::<_, String>(0)).collect())
    }

    /// The body stored under `name`, as text.
    pub(crate) async fn named_body(
        &self,
        table: &NamedRows,
        name: &str,
    ) -> StorageResult<Option<String>> {
        let what = format!("{} {name}", table.what);
        let row = self.row(table.select_body, &[&name], &what).await?;
        Ok(row.map(|row| row.get::<_, String>(0)))
    }

    /// The JSON body stored under `name`, parsed (`Corrupt` when it does not parse).
    pub(crate) async fn named_document<T: DeserializeOwned>(
        &self,
        table: &NamedRows,
        name: &str,
    ) -> StorageResult<Option<T>> {
        let what = format!("{} {name}", table.what);
        self.document(table.select_body, &[&name], &what).await
    }

    /// `body` stored under `name`, replacing any body there.
    pub(crate) async fn named_put(
        &self,
        table: &NamedRows,
        name: &str,
        body: &str,
    ) -> StorageResult<()> {
        let what = format!("{} {name}", table.what);
        self.affected(table.upsert, &[&name, &body], &what)
            .await
            .map(drop)
    }

    /// Removes the row under `name`; whether there was one.
    pub(crate) async fn named_delete(&self, table: &NamedRows, name: &str) -> StorageResult<bool> {
        let what = format!("{} {name}", table.what);
        let removed = self.affected(table.delete, &[&name], &what).await?;
        Ok(removed > 0)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_statements_name_the_table_and_key_once_each() {
        let rows = named_rows!(
            "tt_things",
            "name",
            ", updated_at = clock_timestamp()",
            "thing",
            "things"
        );
        assert_eq!(
            rows.select_names,
            "SELECT name FROM tt_things ORDER BY name"
        );
        assert_eq!(
            rows.select_bodies,
            "SELECT body FROM tt_things ORDER BY name"
        );
        assert_eq!(
            rows.select_body,
            "SELECT body FROM tt_things WHERE name = $1"
        );
        assert_eq!(
            rows.upsert,
            "INSERT INTO tt_things (name, body) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE \
             SET body = EXCLUDED.body, updated_at = clock_timestamp()"
        );
        assert_eq!(rows.delete, "DELETE FROM tt_things WHERE name = $1");
    }
}
