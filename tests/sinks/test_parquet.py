"""Parquet tables (harness.sinks.parquet): written atomically with the job's metadata in the schema, read back only
from a complete, verified generation of a job folder."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.errors import InputError
from harness.job.folder import JobFolder
from harness.sinks.parquet import read_metadata, read_table, write_table
from harness.storage.files import OutputError
from harness.storage.manifest import MANIFEST
from harness.version import __version__

TABLE = pa.table({"system": ["Nemo", "UEdin", "ref-A"], "bleu": [31.25, 29.5, 27.125], "n": [527, 527, 527],
                  "system_version": ["", "", ""]})
META = {"config": "experiment_name: test\nseed: 12345\n", "experiment": "test",
        "signatures": ["nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"],
        "inputs_sha256": {"ref:ref-C": "ab" * 32, "system:Nemo": "cd" * 32}}


def test_a_table_is_written_with_its_metadata(tmp_path):
    path = write_table(TABLE, tmp_path / "system_scores.parquet", META)
    assert path == tmp_path / "system_scores.parquet"
    back = pq.read_table(path)
    assert back.equals(TABLE.replace_schema_metadata(back.schema.metadata))  # the data, exactly
    meta = read_metadata(path)
    assert meta["harness_version"] == __version__
    assert meta["config"] == META["config"] and meta["experiment"] == "test"  # strings as they are
    assert json.loads(meta["signatures"]) == META["signatures"]  # anything else as JSON
    assert json.loads(meta["inputs_sha256"]) == META["inputs_sha256"]
    assert set(meta) == {"harness_version", *META}
    assert [p.name for p in tmp_path.iterdir()] == ["system_scores.parquet"]  # no temporary left


def test_every_column_reads_back_with_the_type_it_was_built_with_and_dictionaries_as_their_values(tmp_path):
    """Arrow's schema is not stored (the file's Parquet types say it all); a dictionary column, as the segment
    table's repeated strings, reads back as the strings (null indices as nulls), chunk by chunk."""
    one = pa.array([0, 0, 0], pa.int32())
    table = pa.table({
        "system": pa.chunked_array([pa.DictionaryArray.from_arrays(one, pa.array(["Nemo"])),
                                    pa.DictionaryArray.from_arrays(one, pa.array(["ref-A"]))]),
        "version": pa.chunked_array([pa.DictionaryArray.from_arrays(pa.nulls(3, pa.int32()), pa.array([], pa.string())),
                                     pa.DictionaryArray.from_arrays(one, pa.array(["v2"]))]),
        "n": pa.chunked_array([[1, 2, 3], [4, 5, 6]]), "bleu": pa.chunked_array([[0.5, None, 1.5], [2.0, 3.0, 4.0]]),
        "counts": pa.chunked_array([pa.array([[1, 2], [3], []]), pa.nulls(3, pa.list_(pa.int64()))]),
        "same_as": pa.chunked_array([pa.nulls(3, pa.string()), pa.array(["a", None, "b"])]),
        "ok": pa.chunked_array([[True, False, True], [False, False, True]])})
    path = write_table(table, tmp_path / "t.parquet", {"experiment": "x"})
    assert b"ARROW:schema" not in pq.read_metadata(path).metadata
    back = pq.read_table(path)
    assert back["system"].type == pa.string() and back["system"].to_pylist() == ["Nemo"] * 3 + ["ref-A"] * 3
    assert back["version"].type == pa.string() and back["version"].to_pylist() == [None] * 3 + ["v2"] * 3
    for name in ("n", "bleu", "counts", "same_as", "ok"):
        assert back[name].type == table[name].type, name
        assert back[name].to_pylist() == table[name].to_pylist(), name
    assert read_metadata(path) == {"experiment": "x", "harness_version": __version__}


def test_metadata_of_a_pandas_table_is_kept_and_pandas_own_left_out(tmp_path):
    frame = pd.DataFrame({"system": ["a", "b"], "bleu": [1.0, 2.0]})
    table = pa.Table.from_pandas(frame, preserve_index=False)
    assert b"pandas" in table.schema.metadata
    path = write_table(table, tmp_path / "t.parquet", {"experiment": "x"})
    assert read_metadata(path) == {"experiment": "x", "harness_version": __version__}
    pd.testing.assert_frame_equal(pd.read_parquet(path), frame)  # pandas still reads its own metadata


def test_a_failed_write_keeps_the_old_table(tmp_path):
    old = write_table(TABLE, tmp_path / "t.parquet", {"experiment": "old"})
    before = old.read_bytes()
    (tmp_path / "in_the_way.parquet" / "x").mkdir(parents=True)  # a real failure: a folder in the new name's way
    with pytest.raises(OutputError) as err:
        write_table(TABLE, tmp_path / "in_the_way.parquet", META)
    assert err.value.path == str(tmp_path / "in_the_way.parquet")
    with pytest.raises(OutputError):
        write_table(TABLE, old / "below.parquet", META)  # under a file
    assert old.read_bytes() == before and not list(tmp_path.glob(".*.tmp"))


# ------------------------------------------------------------------------------------------------ reading


@pytest.fixture()
def published(tmp_path):
    """A job folder whose one generation holds two tables."""
    job = JobFolder(tmp_path / "job", job="test/job")
    with job.held([]):
        staging = job.begin()
        write_table(TABLE, staging / "system_scores.parquet", META)
        write_table(TABLE.slice(0, 1), staging / "segment_scores.parquet", META)
        job.publish({"ref:ref-C": "ab" * 32})
        job.write_status("ok")
    return job.path


def test_a_verified_table_is_read(published):
    table = read_table(published, "system_scores")
    assert table.select(TABLE.column_names).equals(TABLE.replace_schema_metadata(table.schema.metadata))
    assert table.schema.metadata[b"experiment"] == b"test"
    assert read_table(str(published), "segment_scores").num_rows == 1


def test_a_table_the_manifest_does_not_vouch_for_is_refused(published):
    write_table(TABLE, published / "extra.parquet", META)  # in the folder, not in the manifest
    with pytest.raises(InputError) as err:
        read_table(published, "extra")
    assert err.value.path == str(published) and "no complete, verified extra.parquet here" in str(err.value)
    with pytest.raises(InputError, match="no complete, verified nothing.parquet"):
        read_table(published, "nothing")
    path = published / "system_scores.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of the stored table, same size
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="system_scores.parquet"):
        read_table(published, "system_scores")
    assert read_table(published, "segment_scores").num_rows == 1  # the other table still verifies
    (published / MANIFEST).unlink()  # a generation moving in: nothing is trusted
    with pytest.raises(InputError):
        read_table(published, "segment_scores")
