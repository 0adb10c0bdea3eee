mod exec;
mod lsp;
mod provider_errors;
mod reply_limits;
