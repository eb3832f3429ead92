//! UBL 2.1 builders. (to be written)
