#!/usr/bin/python3
"""Reads a TensorBoard event file the way TensorBoard does, independently of the
C++ writer: every TFRecord's length and data CRC are checked with crcmod's
CRC-32C, every record is parsed with protobuf (python3-protobuf) and must
serialise back to the same bytes. Prints JSON on stdout:
  {"records": N, "file_version": ..., "file_version_wall_time": ...,
   "scalars": [{"tag", "step", "value", "wall_time"}, ...]}
Exit status 1 with the reason on stderr for a damaged or malformed file.

usage: read_tfevents.py EVENT_FILE
"""
import json
import struct
import sys

try:
    import crcmod.predefined
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
except ImportError as error:
    sys.exit(f"read_tfevents.py: {error}: install python3-protobuf and python3-crcmod (packaging/install-deps.sh)")

Field = descriptor_pb2.FieldDescriptorProto


def event_class():
    """tensorboard/compat/proto's Event, Summary and Value, cut to the fields
    scalar summaries use (the oneofs kept: they decide what is serialised)."""
    proto = descriptor_pb2.FileDescriptorProto(name="expnet_tfevents_check.proto", package="tensorboard",
                                               syntax="proto3")
    value = proto.message_type.add(name="Value")
    value.oneof_decl.add(name="value")
    value.field.add(name="tag", number=1, type=Field.TYPE_STRING, label=Field.LABEL_OPTIONAL)
    value.field.add(name="simple_value", number=2, type=Field.TYPE_FLOAT, label=Field.LABEL_OPTIONAL,
                    oneof_index=0)
    summary = proto.message_type.add(name="Summary")
    summary.field.add(name="value", number=1, type=Field.TYPE_MESSAGE, type_name=".tensorboard.Value",
                      label=Field.LABEL_REPEATED)
    event = proto.message_type.add(name="Event")
    event.oneof_decl.add(name="what")
    event.field.add(name="wall_time", number=1, type=Field.TYPE_DOUBLE, label=Field.LABEL_OPTIONAL)
    event.field.add(name="step", number=2, type=Field.TYPE_INT64, label=Field.LABEL_OPTIONAL)
    event.field.add(name="file_version", number=3, type=Field.TYPE_STRING, label=Field.LABEL_OPTIONAL,
                    oneof_index=0)
    event.field.add(name="summary", number=5, type=Field.TYPE_MESSAGE, type_name=".tensorboard.Summary",
                    label=Field.LABEL_OPTIONAL, oneof_index=0)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName("tensorboard.Event"))


def masked_crc32c(data, crc32c=crcmod.predefined.mkCrcFun("crc-32c")):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    """The data of each TFRecord; exits naming the record when one is damaged."""
    with open(path, "rb") as f:
        blob = f.read()
    offset, index = 0, 0
    while offset < len(blob):
        header = blob[offset:offset + 12]
        if len(header) < 12:
            sys.exit(f"{path}: record {index} at byte {offset}: truncated header")
        length_bytes = header[:8]
        (length,) = struct.unpack("<Q", length_bytes)
        (length_crc,) = struct.unpack("<I", header[8:])
        if length_crc != masked_crc32c(length_bytes):
            sys.exit(f"{path}: record {index} at byte {offset}: length CRC mismatch")
        data = blob[offset + 12:offset + 12 + length]
        footer = blob[offset + 12 + length:offset + 16 + length]
        if len(data) < length or len(footer) < 4:
            sys.exit(f"{path}: record {index} at byte {offset}: truncated data")
        if struct.unpack("<I", footer)[0] != masked_crc32c(data):
            sys.exit(f"{path}: record {index} at byte {offset}: data CRC mismatch")
        yield index, data
        offset += 16 + length
        index += 1


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    Event = event_class()
    result = {"records": 0, "file_version": None, "file_version_wall_time": None, "scalars": []}
    for index, data in records(path):
        event = Event()
        event.ParseFromString(data)
        if event.SerializeToString() != data:
            sys.exit(f"{path}: record {index}: protobuf serialises the parsed event differently (unknown or "
                     f"misencoded fields)")
        what = event.WhichOneof("what")
        if index == 0:
            if what != "file_version":
                sys.exit(f"{path}: record 0 is a {what}, not the file_version event")
            result["file_version"] = event.file_version
            result["file_version_wall_time"] = event.wall_time
        elif what != "summary":
            sys.exit(f"{path}: record {index} is a {what}, not a summary")
        else:
            for value in event.summary.value:
                if value.WhichOneof("value") != "simple_value":
                    sys.exit(f"{path}: record {index}: tag {value.tag} holds no simple_value")
                result["scalars"].append({"tag": value.tag, "step": event.step, "value": value.simple_value,
                                          "wall_time": event.wall_time})
        result["records"] += 1
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
