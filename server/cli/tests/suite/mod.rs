mod exec;
mod lsp;
mod reply_limits;
