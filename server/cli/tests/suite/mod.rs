mod exec;
mod lsp;
