"""Using the cores: independent runs in parallel processes (``pool``) and the workflow's steps
run side by side where their files allow it (``steps``, ``runner``)."""
