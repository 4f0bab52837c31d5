#!/usr/bin/env python3
"""Decodes Carrier packets with an implementation that is not ours: flatc's
Python code for carrier-packet.fbs on the PyPI `flatbuffers` runtime.

usage: decode_packets.py SCHEMA IN.json OUT.json
IN is a list of hex strings; OUT gets, for each, its fields as JSON (strings
as text, byte vectors as hex, absent fields as null).
"""
import importlib
import json
import os
import subprocess
import sys
import tempfile


def generated(schema):
    folder = tempfile.mkdtemp(prefix="carrier-flatc-")
    subprocess.run(["flatc", "--python", "-o", folder, schema], check=True)
    sys.path.insert(0, folder)
    return folder


def text(value):
    return None if value is None else value.decode("utf-8")


def vector(table, name):
    length = getattr(table, name + "Length")()
    if getattr(table, name + "IsNone")():
        return None
    return bytes(getattr(table, name)(index) for index in range(length)).hex()


def body(packet, cls):
    table = cls()
    union = packet.Body()
    table.Init(union.Bytes, union.Pos)
    return table


def decode(raw):
    packet_module = importlib.import_module("carrier.packet")
    packet = packet_module.packet.GetRootAs(raw, 0)
    fields = {"type": packet.Type(), "bodyType": packet.BodyType()}
    names = {1: "userinfo", 2: "friendreq", 3: "friendmsg", 4: "invitereq", 5: "invitersp", 6: "bulkmsg"}
    name = names.get(packet.BodyType())
    if name is None:
        return fields
    module = importlib.import_module("carrier." + name)
    table = body(packet, getattr(module, name))
    if name == "userinfo":
        fields.update(avatar=table.Avatar(), name=text(table.Name()), descr=text(table.Descr()),
                      phone=text(table.Phone()), gender=text(table.Gender()), email=text(table.Email()),
                      region=text(table.Region()), protoVersion=table.ProtoVersion(),
                      platform=text(table.Platform()), osVersion=text(table.OsVersion()),
                      appVersion=text(table.AppVersion()), avatarUrl=text(table.AvatarUrl()),
                      url=text(table.Url()), ens=text(table.Ens()), extra=text(table.Extra()))
    elif name == "friendreq":
        fields.update(name=text(table.Name()), descr=text(table.Descr()), hello=text(table.Hello()))
    elif name == "friendmsg":
        fields.update(ext=text(table.Ext()), data=vector(table, "Msg"))
    elif name == "bulkmsg":
        fields.update(ext=text(table.Ext()), tid=table.Tid(), totalsz=table.Totalsz(), data=vector(table, "Data"))
    else:
        fields.update(ext=text(table.Ext()), tid=table.Tid(), bundle=text(table.Bundle()), totalsz=table.Totalsz(),
                      data=vector(table, "Data"))
        if name == "invitersp":
            fields.update(status=table.Status(), reason=text(table.Reason()))
    return fields


def main():
    schema, source, target = sys.argv[1:4]
    generated(schema)
    with open(source) as handle:
        buffers = json.load(handle)
    with open(target, "w") as handle:
        json.dump([decode(bytearray.fromhex(item)) for item in buffers], handle)


if __name__ == "__main__":
    main()
