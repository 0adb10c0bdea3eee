//! Recognising dangerous shell commands by parsing them (being written).
