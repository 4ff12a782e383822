#!/usr/bin/env python3
"""Write every object of every gpu.binary in an MLIR file to its own file.

  tessel-opt spec.mlir --tessel-nvvm-pipeline | scripts/gpu-objects.py -o DIR

writes DIR/<binary>.<chip>.ptx for PTX and DIR/<binary>.<chip>.cubin for
NVIDIA objects, DIR/<binary>.<chip>.s (AMDGCN) and .hsaco for AMD ones. With
--print-asm, prints the assembly (PTX or AMDGCN) instead, for FileCheck. It
reads the generic MLIR string escapes (\\XX, \\\\, \\").
"""
import argparse
import os
import re
import sys

OBJECT = re.compile(
    r'#gpu\.object<#(nvvm|rocdl)\.target<([^>]*)>'
    r'(?:, properties = \{[^}]*\})?, '
    r'(assembly|bin) = "((?:[^"\\]|\\.)*)"')
BINARY = re.compile(r'gpu\.binary @([\w.$-]+)')


def unescape(text):
    out = bytearray()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '\\':
            nxt = text[i + 1]
            if nxt in '\\"':
                out.append(ord(nxt))
                i += 2
            else:
                out.append(int(text[i + 1:i + 3], 16))
                i += 3
        else:
            out += ch.encode()
            i += 1
    return bytes(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('input', nargs='?', default='-')
    parser.add_argument('-o', '--output-dir')
    parser.add_argument('--print-asm', action='store_true')
    args = parser.parse_args()
    text = sys.stdin.read() if args.input == '-' else open(args.input).read()
    count = 0
    for line in text.splitlines():
        binary = BINARY.search(line)
        if not binary:
            continue
        for vendor, target, kind, payload in OBJECT.findall(line):
            chip = re.search(r'chip = "(\w+)"', target).group(1)
            data = unescape(payload)
            if kind == 'assembly':
                data = data.rstrip(b'\0')
                if args.print_asm:
                    sys.stdout.write(data.decode())
            if args.output_dir:
                os.makedirs(args.output_dir, exist_ok=True)
                ext = {('nvvm', 'assembly'): 'ptx', ('nvvm', 'bin'): 'cubin',
                       ('rocdl', 'assembly'): 's',
                       ('rocdl', 'bin'): 'hsaco'}[(vendor, kind)]
                path = os.path.join(args.output_dir,
                                    f'{binary.group(1)}.{chip}.{ext}')
                with open(path, 'wb') as f:
                    f.write(data)
                print(path, file=sys.stderr)
            count += 1
    if count == 0:
        sys.exit('gpu-objects.py: no gpu.binary object found')


if __name__ == '__main__':
    main()
