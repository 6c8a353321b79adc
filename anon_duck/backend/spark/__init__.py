"""The Spark engine: the session (:mod:`.session`), Spark SQL as anon_duck writes it
(:mod:`.dialect`), statements as Spark steps (:mod:`.statements`), the backend
(:mod:`.backend`), values through Arrow (:mod:`.arrow`) and fragments in executors
(:mod:`.fragments`)."""
from .backend import SparkBackend
from .session import is_session, open_warehouse, running_session, spark_session
from .statements import Action, to_spark

__all__ = ["Action", "SparkBackend", "is_session", "open_warehouse", "running_session", "spark_session", "to_spark"]
