//! stera-formats (under construction).
