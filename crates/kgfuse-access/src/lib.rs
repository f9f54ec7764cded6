#![doc = include_str!("../README.md")]

pub mod route;
pub mod tokens;
