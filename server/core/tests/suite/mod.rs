mod faults;
mod interrupts;
mod permissions;
mod streaming;
mod support;
mod tools;
