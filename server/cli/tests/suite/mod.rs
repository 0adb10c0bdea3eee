mod exec;
mod lsp;
mod terminal;
