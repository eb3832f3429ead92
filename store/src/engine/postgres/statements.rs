//! How the engine's statements run: each one prepared once per connection
//! and kept ([docs/storage.md](../../../../docs/storage.md#the-postgresql-engine)).
//!
//! `postgres::Client::execute` with SQL text prepares an unnamed statement
//! on every call (a Parse and Describe round trip, then Bind and Execute),
//! so PostgreSQL parses and plans the same text again each time. Here every
//! pooled connection keeps the statements it prepared, by their SQL text,
//! and a statement run again is one Bind and Execute round trip. A
//! statement belongs to its connection (PostgreSQL keeps it whatever becomes of the
//! transaction that prepared it), so a transaction uses the ones its
//! connection holds, and a new connection starts with none.
//!
//! The schema is migrated at open, before the engine runs anything else;
//! should a column's type change under a running node (another node
//! migrating), PostgreSQL replans by itself and refuses only a statement
//! whose result changed shape: that statement fails, and the connection
//! forgets every statement it holds, so the next call prepares anew.

use std::collections::HashMap;

use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, Error, GenericClient, Row, Statement};
use postgres_openssl::MakeTlsConnector;
use r2d2_postgres::r2d2::ManageConnection;
use r2d2_postgres::PostgresConnectionManager;

/// Statements a connection keeps at most: the engine's texts are a few
/// hundred with every filter combination of its lists; past this, a text
/// is run unprepared rather than kept.
const KEPT: usize = 1024;

type Params<'p> = &'p [&'p (dyn ToSql + Sync)];

/// The statements a connection prepared, by their SQL text.
#[derive(Default)]
pub(crate) struct Prepared(HashMap<Box<str>, Statement>);

impl Prepared {
    /// The statement for `sql` on `client`, prepared on first use.
    fn get(&mut self, client: &mut impl GenericClient, sql: &str) -> Result<Statement, Error> {
        if let Some(statement) = self.0.get(sql) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(sql)?;
        if self.0.len() < KEPT {
            self.0.insert(sql.into(), statement.clone());
        }
        Ok(statement)
    }

    /// `result`, the statements forgotten when PostgreSQL refused one of
    /// them as prepared (its result changed shape, or the session lost it).
    fn checked<T>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        if let Err(e) = &result {
            if matches!(
                e.code(),
                Some(&SqlState::FEATURE_NOT_SUPPORTED | &SqlState::INVALID_SQL_STATEMENT_NAME)
            ) {
                self.0.clear();
            }
        }
        result
    }
}

/// A pooled connection: the client and the statements it prepared.
pub(crate) struct PgConn {
    pub(crate) client: Client,
    prepared: Prepared,
}

/// A transaction on a pooled connection, using (and adding to) the
/// statements its connection holds. Rolled back when dropped uncommitted.
pub(crate) struct Tx<'a> {
    tx: postgres::Transaction<'a>,
    prepared: &'a mut Prepared,
}

impl PgConn {
    /// Begins a transaction.
    pub(crate) fn transaction(&mut self) -> Result<Tx<'_>, Error> {
        Ok(Tx {
            tx: self.client.transaction()?,
            prepared: &mut self.prepared,
        })
    }
}

impl Tx<'_> {
    /// Commits the transaction.
    pub(crate) fn commit(self) -> Result<(), Error> {
        self.tx.commit()
    }
}

/// The engine's way of running a statement, on a connection or in a
/// transaction: what `postgres::GenericClient` offers, each statement
/// prepared once per connection.
pub(crate) trait Sql {
    fn execute(&mut self, sql: &str, params: Params<'_>) -> Result<u64, Error>;
    fn query(&mut self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, Error>;
    fn query_one(&mut self, sql: &str, params: Params<'_>) -> Result<Row, Error>;
    fn query_opt(&mut self, sql: &str, params: Params<'_>) -> Result<Option<Row>, Error>;
    /// Statements without parameters, sent as they are (never prepared).
    fn batch_execute(&mut self, sql: &str) -> Result<(), Error>;
}

macro_rules! prepared_sql {
    ($type:ty, $client:ident) => {
        impl Sql for $type {
            fn execute(&mut self, sql: &str, params: Params<'_>) -> Result<u64, Error> {
                let ran = self
                    .prepared
                    .get(&mut self.$client, sql)
                    .and_then(|s| self.$client.execute(&s, params));
                self.prepared.checked(ran)
            }

            fn query(&mut self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, Error> {
                let ran = self
                    .prepared
                    .get(&mut self.$client, sql)
                    .and_then(|s| self.$client.query(&s, params));
                self.prepared.checked(ran)
            }

            fn query_one(&mut self, sql: &str, params: Params<'_>) -> Result<Row, Error> {
                let ran = self
                    .prepared
                    .get(&mut self.$client, sql)
                    .and_then(|s| self.$client.query_one(&s, params));
                self.prepared.checked(ran)
            }

            fn query_opt(&mut self, sql: &str, params: Params<'_>) -> Result<Option<Row>, Error> {
                let ran = self
                    .prepared
                    .get(&mut self.$client, sql)
                    .and_then(|s| self.$client.query_opt(&s, params));
                self.prepared.checked(ran)
            }

            fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
                self.$client.batch_execute(sql)
            }
        }
    };
}

prepared_sql!(PgConn, client);
prepared_sql!(Tx<'_>, tx);

/// The pool's connection manager: `r2d2_postgres`'s, its connections
/// holding their prepared statements.
pub(crate) struct Manager(PostgresConnectionManager<MakeTlsConnector>);

impl Manager {
    pub(crate) fn new(config: postgres::Config, tls: MakeTlsConnector) -> Manager {
        Manager(PostgresConnectionManager::new(config, tls))
    }
}

impl ManageConnection for Manager {
    type Connection = PgConn;
    type Error = Error;

    fn connect(&self) -> Result<PgConn, Error> {
        Ok(PgConn {
            client: self.0.connect()?,
            prepared: Prepared::default(),
        })
    }

    fn is_valid(&self, conn: &mut PgConn) -> Result<(), Error> {
        self.0.is_valid(&mut conn.client)
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        self.0.has_broken(&mut conn.client)
    }
}
