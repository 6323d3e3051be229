"""paneboard's collector: tails tmux panes (locally or over SSH) and classifies them."""
