mod faults;
mod interrupts;
mod streaming;
mod support;
mod tools;
