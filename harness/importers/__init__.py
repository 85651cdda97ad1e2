"""Readers of the field's published data formats, and the writer of a dataset folder from them
(``harness-import``): mt-metrics-eval's layout (:mod:`.mtme`) and Google's MQM annotations (:mod:`.mqm`)."""
