"""Using the cores: independent runs in parallel processes, and a workflow's steps side by
side where their files allow it.

| module | job |
| --- | --- |
| `pool` | independent runs (the seeds of a step) in spawned processes, up to N at a time |
| `graph` | a workflow as a graph: which step waits for which; priorities by the longest chain |
| `runner` | the graph's steps side by side, each run by weasel's command line as `spacy project run` runs it |
| `step_times` | each step's wall and CPU time, in the file the reports read |
| `weasel_api` | weasel's public side: project.yml as it reads it, and a step run by its command line |
"""
