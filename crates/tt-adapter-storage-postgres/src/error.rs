//! The adapter's one error type and its mapping into the ports' `StorageError`, with the
//! reference contract's codes (a unique violation is `agent.already_exists`, a lost or refused
//! connection `agent.storage_io`, unreadable stored JSON `agent.storage_corrupt`). A lost
//! connection (the server went away or is starting up) is an `agent.storage_io` whose message
//! starts with [`CONNECTION_LOST`], which the store's units retry ([`is_connection_lost`]).

use tokio_postgres::error::SqlState;
use tt_ports::StorageError;

/// What can go wrong talking to PostgreSQL.
#[derive(Debug, thiserror::Error)]
pub enum PgStoreError {
    /// The server or the connection failed (includes refused statements).
    #[error("postgres: {context}: {source}")]
    Postgres {
        context: String,
        #[source]
        source: tokio_postgres::Error,
    },
    /// A stored row did not parse back into its domain type.
    #[error("corrupt {what}: {message}")]
    Corrupt { what: String, message: String },
    /// The connection URL or the pool settings are unusable.
    #[error("invalid postgres configuration: {0}")]
    Config(String),
}

impl PgStoreError {
    pub(crate) fn pg(context: impl Into<String>, source: tokio_postgres::Error) -> Self {
        Self::Postgres {
            context: context.into(),
            source,
        }
    }

    /// Whether the server refused the statement as a duplicate key.
    pub fn is_unique_violation(&self) -> bool {
        match self {
            PgStoreError::Postgres { source, .. } => {
                source.code() == Some(&SqlState::UNIQUE_VIOLATION)
            }
            PgStoreError::Corrupt { .. } | PgStoreError::Config(_) => false,
        }
    }
}

/// How the message of a storage error from a lost connection starts.
pub(crate) const CONNECTION_LOST: &str = "the connection to the server was lost";

/// Whether `error` says the connection to the server is gone or could not be made, or the
/// server is shutting down or starting up: a unit of work that failed so may be tried again
/// on a new connection once the server is back.
pub(crate) fn is_connection_error(error: &tokio_postgres::Error) -> bool {
    if error.is_closed() {
        return true;
    }
    if let Some(code) = error.code() {
        return code.code().starts_with("08")
            || [
                SqlState::ADMIN_SHUTDOWN,
                SqlState::CRASH_SHUTDOWN,
                SqlState::CANNOT_CONNECT_NOW,
            ]
            .contains(code);
    }
    std::error::Error::source(error).is_some_and(|source| source.is::<std::io::Error>())
}

/// Whether a port error is a lost connection (see [`CONNECTION_LOST`]).
pub(crate) fn is_connection_lost(error: &StorageError) -> bool {
    matches!(error, StorageError::Io { message, .. } if message.starts_with(CONNECTION_LOST))
}

impl From<PgStoreError> for StorageError {
    fn from(value: PgStoreError) -> Self {
        match value {
            PgStoreError::Postgres { context, source } if is_connection_error(&source) => {
                StorageError::Io {
                    what: context,
                    message: format!("{CONNECTION_LOST}: {source}"),
                }
            }
            PgStoreError::Postgres { context, source } => {
                if source.code() == Some(&SqlState::UNIQUE_VIOLATION) {
                    StorageError::AlreadyExists { what: context }
                } else {
                    StorageError::io(context, source)
                }
            }
            PgStoreError::Corrupt { what, message } => StorageError::Corrupt { what, message },
            PgStoreError::Config(message) => StorageError::Other(message),
        }
    }
}

pub type PgResult<T> = Result<T, PgStoreError>;

/// Maps a driver failure into the port's error, naming what was being done.
pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(tokio_postgres::Error) -> StorageError {
    let context = context.into();
    move |source| StorageError::from(PgStoreError::pg(context, source))
}

/// Parses stored JSON text into a domain type, or `Corrupt`.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(
    what: impl std::fmt::Display,
    text: &str,
) -> Result<T, StorageError> {
    serde_json::from_str(text).map_err(|err| StorageError::corrupt(what.to_string(), err))
}

/// Serializes a domain value for storage.
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(
    what: impl std::fmt::Display,
    value: &T,
) -> Result<String, StorageError> {
    tt_domain::text::json_text(value)
        .map_err(|err| StorageError::Other(format!("cannot serialize {what}: {err}")))
}
