"""Sinks: where a job's results go (Parquet tables, MLflow runs). They read a :class:`harness.job.result.JobResult`
and never change it."""
