"""Reading inputs: a file as a document, Python or a notebook's code cells (`source`,
`notebook`, `documents`); which files a run checks (`discovery`); the configuration
(`config`); the findings cache (`cache`); the comments that switch findings off
(`suppressions`) and write them (`noqa_comments`); the cheap syntax scan of a file that
decides whether it needs a parse (`code_scan`), and the parse itself (`parsing`).

May import: mplint.core.
"""
