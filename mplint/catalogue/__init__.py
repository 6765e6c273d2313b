"""The rule catalogue: the `Rule` base class and the changes a fix is made of (`rule`),
every rule by code (`registry`), their documentation (`ruledocs`), and the text each
rule needs to see before a file is worth parsing (`rule_evidence`).

May import: mplint.core, mplint.inputs, mplint.analysis, mplint.facts.
"""
