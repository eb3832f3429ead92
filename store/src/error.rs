use thiserror::Error;

/// Everything that can go wrong in the store. Handlers map these to 4xx/5xx.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("storage engine: {0}")]
    Engine(#[from] sled::Error),
    #[error("stored value in tree `{tree}` is unreadable: {reason}")]
    Corrupt { tree: &'static str, reason: String },
    #[error("stored value in tree `{tree}` has format version {found}, this build reads up to {supported}")]
    UnknownFormat {
        tree: &'static str,
        found: u8,
        supported: u8,
    },
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("a document with this external reference already exists (id {id})")]
    DuplicateReference { id: u64 },
    #[error("the monthly document limit ({limit}) is reached")]
    LimitReached { limit: u64 },
    #[error("numbering range exhausted for resolution {resolution_id}")]
    RangeExhausted { resolution_id: u64 },
    /// A restored store's numbering, not confirmed yet (`Backup`).
    #[error("numbering {resolution_id} is held since a restore: confirm its next number (emisor admin numbering confirm)")]
    NumberingHeld { resolution_id: u64 },
    #[error("could not make the write durable: {0}")]
    Durability(String),
    #[error("file system: {0}")]
    Io(#[from] std::io::Error),
    #[error("data dir is in use by another emisor process (sled lock): {0}")]
    Locked(String),
    /// A sealed secret could not be sealed or opened.
    #[error("sealed secrets: {0}")]
    Sealing(String),
    /// The master key given does not open the store (or none was given).
    #[error("{0}")]
    MasterKey(String),
    /// The store's database cannot be reached (PostgreSQL down, its
    /// connections exhausted): new work is refused until it is back.
    #[error("the store is unavailable: {0}")]
    Unavailable(String),
    /// A new document's commit whose answer was lost with the connection
    /// (the database went away as it committed): document `id` may be
    /// stored, half-built. The caller hears that the store is unavailable;
    /// issuing settles the document once the store answers.
    #[error("the store is unavailable: {cause}")]
    UnsettledCommit { id: u64, cause: String },
    /// What this engine does not do (a backup's copy point on PostgreSQL,
    /// whose own tools back it up), and what to do instead.
    #[error("{0}")]
    NotOnThisEngine(String),
    /// A value the engine cannot keep as given (PostgreSQL's text holds
    /// no NUL character): the request is refused, nothing is written.
    #[error("{0}")]
    Unstorable(String),
    /// The database refused a statement.
    #[error("database: {0}")]
    Database(String),
    /// A list filtered by a key its family does not index.
    #[error("{family} documents are not listed by `{key}`")]
    UnindexedKey { family: &'static str, key: String },
}

impl From<sled::transaction::TransactionError<StoreError>> for StoreError {
    fn from(e: sled::transaction::TransactionError<StoreError>) -> Self {
        match e {
            sled::transaction::TransactionError::Abort(inner) => inner,
            sled::transaction::TransactionError::Storage(s) => StoreError::Engine(s),
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;
