"""Front ends: the command line (`cli`, `check_command`, `watch`, `progress`, and the
entry point `launch`), the resident server (`server`, its address `server_address`, its
commands `server_command`, and what the client checks before trusting it,
`server_trust`), the language server (`lsp`), the flake8 plugin (`flake8_plugin`) and
the report formats (`reporters`).

May import: every other package of mplint, mplint.verify included. Nothing imports it
but `mplint.__main__`.
"""
