"""The wire codec on its own (``transport/codec.py``): what a header holds, which headers it
refuses, and the checks between a frame and the array it lands in."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

from actorflow.errors import MalformedMessage, TransportError
from actorflow.transport import codec


def test_a_strided_array_goes_out_as_its_values_in_order():
    a = np.arange(12, dtype=np.int32).reshape(3, 4).T  # not C-contiguous
    frames = codec.encode(5, {"x": 1}, [("t", a)])
    kind, body, metas = codec.decode_head(frames[0])
    assert (kind, body, metas) == (5, {"x": 1}, [["t", "<i4", [4, 3]]])
    got = codec.arrays_of(metas, [memoryview(f) for f in frames[1:]])["t"]
    np.testing.assert_array_equal(got, a)


def test_a_header_without_arrays_carries_no_blob_list_and_keeps_integer_keys():
    frames = codec.encode(3, {1: "one", "two": [2]})
    assert len(frames) == 1
    assert codec.decode_head(frames[0]) == (3, {1: "one", "two": [2]}, None)
    assert codec.decode_head(codec.encode_head(4, [7])) == (4, [7], None)
    assert codec.arrays_of(None, []) == {} and codec.views_of(None, []) == {}


@pytest.mark.parametrize("head, problem", [
    ([codec.WIRE_VERSION, "MSG", [], None], r"malformed message header from peer: kind 'MSG', "
                                            r"blob list NoneType"),
    ([codec.WIRE_VERSION, 0, [], 5], r"kind 0, blob list int"),
    ([codec.WIRE_VERSION, 0, [], {"a": 1}], r"blob list dict"),
    ([codec.WIRE_VERSION + 1, 0, [], None], r"speaks wire version 2; this actorflow speaks 1"),
    ([codec.WIRE_VERSION, 0, []], r"undecodable message header"),
])
def test_headers_of_the_wrong_shape_are_refused_naming_what(head, problem):
    with pytest.raises(MalformedMessage, match=problem):
        codec.decode_head(msgpack.packb(head), "peer")


def test_a_blob_meta_that_does_not_fit_its_frame_is_refused():
    with pytest.raises(MalformedMessage, match=r"does not describe its 12-byte frame"):
        codec.view(["x", "<f8", [2]], b"\0" * 12)
    with pytest.raises(MalformedMessage, match=r"does not describe"):
        codec.view(["x", "<f4", [4, -1, 2]], b"\0" * 16)
    assert codec.view(["x", "<f4", [3]], b"\0" * 12).shape == (3,)


def test_copy_into_checks_count_names_shapes_and_dtypes():
    dst = {"a": np.zeros(3, np.float32)}
    good = codec.encode(0, None, [("a", np.arange(3, dtype=np.float32))])
    metas = codec.decode_head(good[0])[2]
    frames = [memoryview(f) for f in good[1:]]
    codec.copy_into(metas, frames, dst, "desc 7")
    np.testing.assert_array_equal(dst["a"], [0, 1, 2])
    with pytest.raises(TransportError, match=r"desc 7: header lists 1 blobs, got 0 frames"):
        codec.copy_into(metas, [], dst, "desc 7")
    with pytest.raises(TransportError, match=r"desc 8: unknown blob 'a' \(expected \['b'\]\)"):
        codec.copy_into(metas, frames, {"b": dst["a"]}, lambda: "desc 8")
    for other in (np.zeros(3, np.int32), np.zeros(4, np.float32)):  # dtype alone, shape alone
        with pytest.raises(TransportError, match=r"blob 'a' arrived as \(3,\) float32, the "
                                                 "receive buffer is"):
            codec.copy_into(metas, frames, {"a": other}, "desc 7")
