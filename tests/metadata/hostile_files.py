#!/usr/bin/python3
"""Hostile image files for test_alt_text::hostileFilesFailOneByOne, written into FOLDER:
a 100 MB XMP packet (PNG iTXt, and TIFF tag 700), the same packet compressed in a PNG
(97 KB that inflate to 100 MB), a JPEG whose XMP is not well-formed, a JPEG of 1,000 APP1
segments (500 Exif, 500 XMP), TIFFs whose IFDs loop (the next-IFD pointer, and the Exif
IFD pointer, back at IFD0); and plain.jpg, a plain photo. Pixels by OpenCV, the rest by hand.

usage: hostile_files.py FOLDER"""
import cv2, numpy as np, struct, sys, zlib
d = sys.argv[1]
img = np.zeros((32, 48, 3), np.uint8); cv2.circle(img, (20, 16), 10, (0, 0, 255), -1)
png, jpg = cv2.imencode('.png', img)[1].tobytes(), cv2.imencode('.jpg', img)[1].tobytes()
def packet(size):
    head = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>'
    tail = b'</dc:title></rdf:Description></rdf:RDF></x:xmpmeta>'
    return head + b'a' * (size - len(head) - len(tail)) + tail
def png_chunk(kind, data):
    return png[:33] + struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data)) + png[33:]
def app1(payload):
    return b'\xff\xe1' + struct.pack('>H', len(payload) + 2) + payload
def tiff(extra, loop_next=False, loop_exif=False):
    pixels = img[:, :, ::-1].tobytes()
    entries = [(256, 3, 1, 48), (257, 3, 1, 32), (258, 3, 3, 'bps'), (259, 3, 1, 1), (262, 3, 1, 2), (273, 4, 1, 'strip'),
               (277, 3, 1, 3), (278, 3, 1, 32), (279, 4, 1, len(pixels))] + extra + ([(34665, 4, 1, 8)] if loop_exif else [])
    entries.sort(key=lambda e: e[0])
    data_at = 8 + 2 + 12 * len(entries) + 4
    blobs, table, strip_at = b'', b'', None
    for tag, kind, count, value in entries:
        if value == 'bps' or isinstance(value, bytes):
            blob = struct.pack('<HHH', 8, 8, 8) if value == 'bps' else value
            table += struct.pack('<HHII', tag, kind, count, data_at + len(blobs)); blobs += blob + b'\0' * (len(blob) % 2)
        elif value == 'strip': table += struct.pack('<HHI', tag, kind, count); strip_at = len(table); table += b'\0\0\0\0'
        elif kind == 3: table += struct.pack('<HHIHH', tag, kind, count, value, 0)
        else: table += struct.pack('<HHII', tag, kind, count, value)
    table = table[:strip_at] + struct.pack('<I', data_at + len(blobs)) + table[strip_at + 4:]
    return b'II*\0' + struct.pack('<IH', 8, len(entries)) + table + struct.pack('<I', 8 if loop_next else 0) + blobs + pixels
huge = packet(100 * 1000 * 1000)
files = {
  'huge_xmp.png': png_chunk(b'iTXt', b'XML:com.adobe.xmp\0\0\0\0\0' + huge),
  'inflating_xmp.png': png_chunk(b'iTXt', b'XML:com.adobe.xmp\0\x01\0\0\0' + zlib.compress(huge, 9)),
  'huge_xmp.tif': tiff([(700, 1, len(huge), huge)]),
  'corrupt_xmp.jpg': jpg[:2] + app1(b'http://ns.adobe.com/xap/1.0/\0<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><unclosed') + jpg[2:],
  'many_app1.jpg': jpg[:2] + b''.join(app1(b'Exif\0\0MM\0*\0\0\0\x08\0\0\0\0\0\0' if i % 2 else b'http://ns.adobe.com/xap/1.0/\0' + packet(600)) for i in range(1000)) + jpg[2:],
  'looping_ifds.tif': tiff([], loop_next=True),
  'looping_exif_ifd.tif': tiff([], loop_exif=True),
}
for name, data in files.items(): open(d + '/' + name, 'wb').write(data)
cv2.imwrite(d + '/plain.jpg', img)
