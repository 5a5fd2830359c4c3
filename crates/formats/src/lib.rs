//! File formats of the book generator: YaneuraOu DB2016 books ([`db2016`]) and game
//! records ([`kifu`]).

pub mod db2016;
pub mod kifu;
mod lines;
