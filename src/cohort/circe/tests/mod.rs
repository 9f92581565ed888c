//! Unit tests. Every expected value is a literal worked out by hand; the comment next to it
//! gives the reasoning.

mod fixture;

mod accept;
mod evaluate;
mod groups;
mod reject;
mod windows;
