//! stera-book (under construction).
