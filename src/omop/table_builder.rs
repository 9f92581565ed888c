//! Row-at-a-time appends into the Arrow column builders of one CDM table.

use std::sync::Arc;

use arrow_array::builder::{
    Date32Builder, Float64Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::ArrowError;

use super::cdm::{ColType, Table};

/// One value of a row, already of its column's type.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
    /// Days since 1970-01-01.
    Date(i32),
    /// Microseconds since 1970-01-01T00:00:00.
    Timestamp(i64),
}

enum Column {
    Int(Int64Builder),
    Float(Float64Builder),
    Text(StringBuilder),
    Date(Date32Builder),
    Timestamp(TimestampMicrosecondBuilder),
}

/// Appends whole rows (a row is checked before it reaches here, so no row is half-written).
pub struct TableBuilder {
    pub table: &'static Table,
    columns: Vec<Column>,
}

impl TableBuilder {
    pub fn new(table: &'static Table) -> Self {
        let columns = table
            .columns
            .iter()
            .map(|c| match c.ty {
                ColType::Int => Column::Int(Int64Builder::new()),
                ColType::Float => Column::Float(Float64Builder::new()),
                ColType::Text => Column::Text(StringBuilder::new()),
                ColType::Date => Column::Date(Date32Builder::new()),
                ColType::Timestamp => Column::Timestamp(TimestampMicrosecondBuilder::new()),
            })
            .collect();
        Self { table, columns }
    }

    /// A row of nulls to fill by column name.
    pub fn blank(&self) -> Vec<Cell> {
        vec![Cell::Null; self.table.columns.len()]
    }

    /// Sets one cell of a row built with [`blank`](Self::blank).
    pub fn set(&self, row: &mut [Cell], column: &str, cell: Cell) {
        match self.table.index(column) {
            Some(i) => row[i] = cell,
            None => debug_assert!(false, "{}.{column} is not a CDM column", self.table.name),
        }
    }

    /// Appends a row whose cells match the column types (a mismatched cell becomes null; rows
    /// are built by this module, so that is a bug the unit tests catch).
    pub fn append(&mut self, row: Vec<Cell>) {
        for (col, cell) in self.columns.iter_mut().zip(row) {
            match (col, cell) {
                (Column::Int(b), Cell::Int(v)) => b.append_value(v),
                (Column::Float(b), Cell::Float(v)) => b.append_value(v),
                (Column::Text(b), Cell::Text(v)) => b.append_value(v),
                (Column::Date(b), Cell::Date(v)) => b.append_value(v),
                (Column::Timestamp(b), Cell::Timestamp(v)) => b.append_value(v),
                (Column::Int(b), _) => b.append_null(),
                (Column::Float(b), _) => b.append_null(),
                (Column::Text(b), _) => b.append_null(),
                (Column::Date(b), _) => b.append_null(),
                (Column::Timestamp(b), _) => b.append_null(),
            }
        }
    }

    /// The table as one batch; fails only if a required column got a null (a bug).
    pub fn finish(mut self) -> Result<RecordBatch, ArrowError> {
        let arrays: Vec<ArrayRef> = self
            .columns
            .iter_mut()
            .map(|c| -> ArrayRef {
                match c {
                    Column::Int(b) => Arc::new(b.finish()),
                    Column::Float(b) => Arc::new(b.finish()),
                    Column::Text(b) => Arc::new(b.finish()),
                    Column::Date(b) => Arc::new(b.finish()),
                    Column::Timestamp(b) => Arc::new(b.finish()),
                }
            })
            .collect();
        RecordBatch::try_new(self.table.schema(), arrays)
    }
}
