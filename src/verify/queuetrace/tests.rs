//! Queue-script tests.
use super::*;
