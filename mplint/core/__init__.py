"""The vocabulary every layer shares: findings, their locations, fixes and premises
(`diagnostics`), the rule codes and how a selection of them is read (`codes`,
`selection`), offsets and rows in a text (`textpos`), the number literals float16
cannot hold (`float16_literals`), and the garbage-collector pause around parses
(`gc_pause`).

May import: nothing of mplint but its version. Everything else may import it.
"""
