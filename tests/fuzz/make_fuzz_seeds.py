#!/usr/bin/python3
# Writes the fuzzers' seed corpora (tests/fuzz/corpus/<target>/<target>-NAME), small
# real files of each format (docs/reliability.md). Run with Debian's /usr/bin/python3
# (torch, cv2, numpy); OUT defaults to tests/fuzz/corpus beside this script.
import os, io, sys, json, pickle, collections, zipfile, struct
import numpy as np, cv2, torch
HERE = os.path.dirname(os.path.abspath(__file__))
R = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, 'corpus')
def put(target, name, data):
    d = os.path.join(R, target); os.makedirs(d, exist_ok=True)
    if isinstance(data, str): data = data.encode()
    assert len(data) <= 8192, (target, name, len(data))
    open(os.path.join(d, target + '-' + name), 'wb').write(data)

# unpickler: plain pickles of every protocol, and torch.save data.pkl programs
od = collections.OrderedDict([('a', 1), ('b', [1.5, None, True]), ('c', ('x', b'\x00\x01'))])
for p in range(0, 6):
    put('unpickler', f'plain_p{p}.pkl', pickle.dumps({'k': [1, -2, 2**40, 3.25, 'é', (1, 2)], 'n': None, 's': {1, 2}}, protocol=p))
put('unpickler', 'ordered_p2.pkl', pickle.dumps(od, protocol=2))
put('unpickler', 'nested_p4.pkl', pickle.dumps([[[[{'d': [1]}]]]], protocol=4))
shared = [1, 2]
put('unpickler', 'memo_shared_p2.pkl', pickle.dumps({'x': shared, 'y': shared}, protocol=2))
put('unpickler', 'bigint_p2.pkl', pickle.dumps([2**63 - 1, -2**63, 2**70, -1], protocol=2))
def torch_pkl(obj, name):
    buf = io.BytesIO(); torch.save(obj, buf)
    z = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    data = [n for n in z.namelist() if n.endswith('data.pkl')][0]
    put('unpickler', name, z.read(data))
    return buf.getvalue()
sd = collections.OrderedDict([('w', torch.arange(6, dtype=torch.float32).reshape(2, 3)), ('b', torch.zeros(3, dtype=torch.int64))])
zsd = torch_pkl(sd, 'torch_state_dict.pkl')
torch_pkl({'model': sd, 'epoch': 3, 'lr': 1e-4, 'half': torch.ones(2, dtype=torch.float16), 'flag': torch.tensor([True])}, 'torch_checkpoint.pkl')
torch_pkl({'p': torch.nn.Parameter(torch.ones(2, 2)), 'view': torch.arange(10)[2:8:2]}, 'torch_parameter_view.pkl')
legacy = io.BytesIO(); torch.save({'a': torch.ones(1)}, legacy, _use_new_zipfile_serialization=False)
put('unpickler', 'torch_legacy_prefix.pkl', legacy.getvalue()[:600])

# vocabulary: our JSON and the authors' pickle
words = ['.', 'a', 'dog', 'EOS', 'PAD', 'SOS', 'UNK', 'on', 'the', 'é']
put('vocabulary', 'ours.json', json.dumps({'format': 'expnet-vocabulary', 'version': 1, 'words': words, 'sos': 'SOS', 'eos': 'EOS', 'pad': 'PAD', 'unk': 'UNK'}))
put('vocabulary', 'ours_del.json', json.dumps({'format': 'expnet-vocabulary', 'version': 1, 'words': words + ['DEL'], 'sos': 'SOS', 'eos': 'EOS', 'pad': 'PAD', 'unk': 'UNK', 'del': 'DEL'}))
vp = {'word2idx_dict': {w: i for i, w in enumerate(words)}, 'idx2word_list': words, 'sos_str': 'SOS', 'eos_str': 'EOS'}
for p in (2, 3, 4):
    put('vocabulary', f'authors_p{p}.pickle', pickle.dumps(vp, protocol=p))
put('vocabulary', 'tiny_fixture.pickle', open(os.path.join(HERE, '..', '..', '..', 'shared', 'fixtures', 'reference', 'tiny', 'vocab.pickle'), 'rb').read())
put('vocabulary', 'authors_custom_sos.pickle', pickle.dumps({'idx2word_list': ['<s>', '</s>', 'PAD', 'x'], 'sos_str': '<s>', 'eos_str': '</s>'}, protocol=2))

# images: every format OpenCV 4.6 reads, small
rng = np.random.default_rng(1)
rgb = rng.integers(0, 255, (6, 5, 3), dtype=np.uint8)
gray = rgb[:, :, 0].copy()
rgba = np.dstack([rgb, gray])
def enc(ext, img, params=()):
    ok, b = cv2.imencode(ext, img, list(params)); assert ok, ext; return b.tobytes()
put('image_decode', 'rgb.png', enc('.png', rgb))
put('image_decode', 'gray.png', enc('.png', gray))
put('image_decode', 'rgba.png', enc('.png', rgba))
put('image_decode', 'rgb16.png', enc('.png', rgb.astype(np.uint16) * 257))
put('image_decode', 'rgb.jpg', enc('.jpg', rgb))
put('image_decode', 'gray.jpg', enc('.jpg', gray))
put('image_decode', 'progressive.jpg', enc('.jpg', rgb, (cv2.IMWRITE_JPEG_PROGRESSIVE, 1)))
put('image_decode', 'cmyk.jpg', open(os.path.join(HERE, '..', 'data', 'image', 'cmyk_32x8.jpg'), 'rb').read())
put('image_decode', 'rgb.bmp', enc('.bmp', rgb))
put('image_decode', 'gray.bmp', enc('.bmp', gray))
put('image_decode', 'rgb.tiff', enc('.tiff', rgb))
put('image_decode', 'rgb16.tiff', enc('.tiff', rgb.astype(np.uint16) * 257))
put('image_decode', 'rgb.webp', enc('.webp', rgb))
put('image_decode', 'lossless.webp', enc('.webp', rgba, (cv2.IMWRITE_WEBP_QUALITY, 101)))
put('image_decode', 'rgb.ppm', enc('.ppm', rgb))
put('image_decode', 'gray.pgm', enc('.pgm', gray))
put('image_decode', 'ascii.pgm', enc('.pgm', gray, (cv2.IMWRITE_PXM_BINARY, 0)))
put('image_decode', 'bits.pbm', enc('.pbm', (gray > 127).astype(np.uint8) * 255))
put('image_decode', 'rgba.pam', enc('.pam', rgba))
put('image_decode', 'rgb.jp2', enc('.jp2', np.tile(rgb, (8, 8, 1))))
put('image_decode', 'rgb.ras', enc('.ras', rgb))
put('image_decode', 'rgb.hdr', enc('.hdr', rgb.astype(np.float32) / 255))
# A JPEG with an EXIF orientation tag (6: rotate 90), spliced after SOI.
j = enc('.jpg', rgb)
tiff = b'MM\x00\x2a\x00\x00\x00\x08' + struct.pack('>H', 1) + struct.pack('>HHIHH', 0x0112, 3, 1, 6, 0) + b'\x00\x00\x00\x00'
exif = b'Exif\x00\x00' + tiff
put('image_decode', 'exif_rot90.jpg', j[:2] + b'\xff\xe1' + struct.pack('>H', len(exif) + 2) + exif + j[2:])

# datasets
karpathy = {'dataset': 'coco', 'images': [
    {'filepath': 'val2014', 'filename': 'COCO_val2014_1.jpg', 'cocoid': 1, 'imgid': 0, 'split': 'val', 'width': 640, 'height': 480,
     'sentences': [{'raw': 'A dog on the grass.', 'tokens': ['a', 'dog', 'on', 'the', 'grass']}, {'tokens': ['two', 'cats']}]},
    {'filepath': 'train2014', 'filename': 'b.jpg', 'imgid': 7, 'split': 'restval', 'sentences': []},
    {'filename': 'c.png', 'split': 'Test', 'sentences': [{'raw': "Don't panic, it's 10:30 \u00e9t\u00e9!"}]}]}
coco = {'images': [{'id': 9, 'file_name': 'sub/x.jpg', 'width': 3, 'height': 2}, {'id': 10, 'file_name': 'y.jpg'}],
        'annotations': [{'image_id': 9, 'id': 1, 'caption': 'A red bus.'}, {'image_id': 10, 'id': 2, 'caption': 'A cat'}, {'image_id': 9, 'caption': 'Bus!'}]}
for t in ('dataset_json', 'karpathy_stream'):
    put(t, 'karpathy.json', json.dumps(karpathy, ensure_ascii=False))
    put(t, 'karpathy_pretty.json', '\ufeff' + json.dumps(karpathy, indent=1))
    put(t, 'karpathy_min.json', '{"images":[{"filename":"a.jpg","split":"train","sentences":[{"raw":"x"}]}]}')
put('karpathy_stream', 'two_images_fields.json', '{"images":[],"x":{"y":[1,2.5e3,-0,null,true]},"images":[{"filename":"a","split":"val","cocoid":18446744073709551615}]}')
put('dataset_json', 'coco.json', json.dumps(coco))
put('dataset_json', 'coco_pretty.json', json.dumps(coco, indent=2))
put('dataset_csv', 'basic.csv', 'image,caption,split,id\nval2014/a.jpg,A dog.,val,1\nval2014/a.jpg,"A dog, running",val,1\nb.jpg,"He said ""hi""",train,2\n\n')
put('dataset_csv', 'crlf_bom.csv', '\ufeffFile_Name,Text\r\nx.png,"multi\r\nline"\r\ny.png,plain\r\n')
put('dataset_csv', 'columns.csv', 'id,path,sentence,split\n5,a/b/c.jpg,one,test\n6,d.jpg,two,validation\n')
put('dataset_jsonl', 'basic.jsonl', '{"image": "a.jpg", "caption": "A dog.", "split": "val", "id": 3}\n{"image": "a.jpg", "caption": "Another."}\n\n{"file_name": "b/c.jpg", "captions": ["x", "y"], "split": "train"}\n')
put('dataset_jsonl', 'sentences.jsonl', '{"path":"z.jpg","sentences":["s1"],"cocoid":"12"}\r\n{"image":"q.jpg","text":"t","split":null}\n')

# tokenizer
for i, s in enumerate(['A man riding a wave on top of a surfboard.', "Don't, can't, cannot; he's gonna (maybe) [x] {y}!",
                       'The "quoted" \u2018word\u2019 and \u201cmore\u201d... -- 1,000 at 10:30 and/or at&t o\'clock',
                       'CAF\u00c9 \u00e9t\u00e9 \u0130stanbul \u00df \u2019s john \'s we\'re I\'m you\'ve',
                       'tabs\tand\u00a0nbsp\u3000ideographic\u2028line #1 $5 50% a+b=c', '\xff\xfe bad utf8 \xc3']):
    put('eval_tokenizer', f'caption{i}.txt', s.encode('utf-8', 'surrogateescape') if i != 5 else b'\xff\xfe bad utf8 \xc3')

# zip entries: torch.save archives and zips python writes
put('zip_entries', 'torch_state_dict.pth', zsd)
z = io.BytesIO()
with zipfile.ZipFile(z, 'w', zipfile.ZIP_DEFLATED) as f:
    f.writestr('archive/data.pkl', pickle.dumps({'a': 1}, protocol=2)); f.writestr('archive/data/0', b'\0' * 4000)
    f.writestr(zipfile.ZipInfo('archive/version'), b'3\n')
put('zip_entries', 'deflated.zip', z.getvalue())
z = io.BytesIO()
with zipfile.ZipFile(z, 'w', zipfile.ZIP_STORED) as f:
    f.writestr('a', b'hello'); f.writestr('dir/b', b'')
put('zip_entries', 'stored.zip', z.getvalue())
z = io.BytesIO()
with zipfile.ZipFile(z, 'w', zipfile.ZIP_DEFLATED, allowZip64=True) as f:
    with f.open('big', 'w', force_zip64=True) as g: g.write(b'x' * 100)
put('zip_entries', 'zip64.zip', z.getvalue())
put('zip_entries', 'empty.zip', b'PK\x05\x06' + b'\0' * 18)
