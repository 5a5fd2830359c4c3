//! stera-engine (under construction).
