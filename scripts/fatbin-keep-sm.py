#!/usr/bin/env python3
"""Zeroes, in place, every GPU code image in a shared library's .nv_fatbin section except the
cubins built for one SM architecture (e.g. 90 for the H100/H200).

Why: the CUDA provider of onnxruntime-gpu is 284 MB, 218 MB of it cubins for six architectures,
and a device call carries at most 64 MiB. A zeroed image compresses to nothing, so the provider
packs to about 52 MB xz instead of 186 MB. The file keeps its size and every header: the driver
picks the image for the device's architecture and never reads the others. The result runs only
on that architecture; it is for carrying to a known GPU, never for shipping.

Usage: fatbin-keep-sm.py SM LIBRARY   (prints what it kept and zeroed)
"""
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KIND_CUBIN = 2


def fatbin_section(data):
    """(offset, size) of the .nv_fatbin section of an ELF64 little-endian file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        sys.exit("fatbin-keep-sm: not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx][4]
    for name, _typ, _flags, _addr, offset, size in headers:
        end = data.index(b"\0", strtab + name)
        if data[strtab + name:end] == b".nv_fatbin":
            return offset, size
    sys.exit("fatbin-keep-sm: no .nv_fatbin section")


def images(data, offset, size):
    """Each code image: (payload offset, payload size, kind, arch)."""
    p, end = offset, offset + size
    while p < end:
        magic, _version, header_size, fat_size = struct.unpack_from("<IHHQ", data, p)
        if magic != FATBIN_MAGIC:
            p += 8  # fatbins are 8-byte aligned; padding between them
            continue
        q, fat_end = p + header_size, p + header_size + fat_size
        while q < fat_end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, q)
            arch, = struct.unpack_from("<I", data, q + 28)
            yield q + entry_header, payload, kind, arch
            q += entry_header + payload
        if q != fat_end:
            sys.exit("fatbin-keep-sm: a fatbin's entries overrun it; format not understood")
        p = fat_end


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sm, path = int(sys.argv[1]), sys.argv[2]
    with open(path, "rb") as f:
        data = bytearray(f.read())
    kept = zeroed = 0
    for start, size, kind, arch in list(images(data, *fatbin_section(data))):
        if kind == KIND_CUBIN and arch == sm:
            kept += size
        else:
            data[start:start + size] = bytes(size)
            zeroed += size
    if kept == 0:
        sys.exit(f"fatbin-keep-sm: no sm_{sm} cubins in {path}; nothing written")
    with open(path, "wb") as f:
        f.write(data)
    print(f"fatbin-keep-sm: kept {kept} bytes of sm_{sm} cubins, zeroed {zeroed} bytes")


if __name__ == "__main__":
    main()
