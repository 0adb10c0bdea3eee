mod conversations;
mod faults;
mod interrupts;
mod permissions;
mod sandbox;
mod streaming;
mod support;
mod tools;
