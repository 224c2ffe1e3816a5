"""Write batchmachine.json.gz: what batch-machine's own conform code makes of
OpenAddresses' acceptance tests and regexp patterns, for TestCatalogAcceptance and
TestCatalogRegexps.

    python3 batchmachine.py BATCH_MACHINE_CHECKOUT OPENADDRESSES_CHECKOUT | gzip -9 -n > batchmachine.json.gz

It loads openaddr/conform.py with stand-ins for GDAL and Shapely, which the
row functions never call, so only the Python standard library is needed.
"""
import copy
import glob
import json
import os
import subprocess
import sys

bm, oa = sys.argv[1], sys.argv[2]

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bmload import load_conform  # noqa: E402

conform = load_conform(bm)

SCHEMAS = {
    'addresses': conform.ADDRESSES_SCHEMA,
    'buildings': conform.BUILDINGS_SCHEMA,
    'parcels': conform.PARCELS_SCHEMA,
    'centerlines': conform.CENTERLINES_SCHEMA,
}


class SourceConfig:
    def __init__(self, layer, data_source):
        self.layer = layer
        self.data_source = data_source
        self.SCHEMA = SCHEMAS[layer]


def run(layer, conform_obj, inputs):
    """The columns batch-machine maps inputs to, without the hash, or the
    name of the exception it raises."""
    sc = SourceConfig(layer, {'conform': copy.deepcopy(conform_obj), 'fingerprint': '0'})
    row = dict(inputs)
    row[conform.GEOM_FIELDNAME] = ''
    try:
        out = conform.row_transform_and_convert(sc, row)['properties']
    except Exception as e:
        return {'error': type(e).__name__}
    out.pop('hash', None)
    return {'output': {k: ('' if v is None else v) for k, v in out.items()}}


def git_head(path):
    return subprocess.run(['git', '-C', path, 'rev-parse', 'HEAD'], capture_output=True, text=True).stdout.strip()


# Values regexp patterns are tried on besides the inputs of the catalog's
# tests: address-like strings with the shapes the catalog's patterns cut.
SAMPLES = [
    '', ' ', '123 MAIN ST', '123 N MAIN ST APT 4', '123-1/2 Main Street', '12B Elm Ave #3',
    'MAIN ST', '4500 S 700 E UNIT 12', '  77  OAK  DR  ', '1 1/2 RIVER RD', 'PO BOX 12',
    '10-12 Queens Blvd', 'Rue de la Paix 12', 'Hauptstraße 5a', 'N123W45678 County Rd',
    '123 MAIN ST, SPRINGFIELD, IL 62701', '٣٤ شارع', 'Calle 5 #10-20', '0', '12.0', 'ONE\tTWO\nTHREE',
]


def regexp_cases(path, layer, attr, f, test_inputs):
    field = f.get('field')
    values = list(SAMPLES)
    for inputs in test_inputs:
        v = inputs.get(field)
        if isinstance(v, str) and v not in values:
            values.append(v)
    cases = []
    for v in values:
        r = run(layer, {attr: f}, {field: v})
        # [value, column's result] or [value, None, exception's name]
        cases.append([v, r['output'][attr]] if 'output' in r else [v, None, r['error']])
    return cases


def main():
    out = {
        'batch_machine_commit': git_head(bm),
        'openaddresses_commit': git_head(oa),
        'python': sys.version.split()[0],
        'acceptance': [],
        'regexps': [],
    }
    seen = set()
    for path in sorted(glob.glob(os.path.join(oa, 'sources', '**', '*.json'), recursive=True)):
        src = json.load(open(path))
        rel = os.path.relpath(path, oa)
        for layer, items in sorted((src.get('layers') or {}).items()):
            if layer not in SCHEMAS:
                continue
            for item in items:
                c = item.get('conform') or {}
                tests = (item.get('test') or {}).get('acceptance-tests') or []
                for i, t in enumerate(tests):
                    out['acceptance'].append({
                        'source': rel, 'layer': layer, 'conform': c, 'index': i,
                        'description': t.get('description', ''), 'inputs': t['inputs'],
                        'expected': t['expected'], **run(layer, c, t['inputs']),
                    })
                test_inputs = [t['inputs'] for t in tests]

                def walk(attr, f):
                    if not isinstance(f, dict):
                        return
                    if f.get('function') == 'regexp':
                        key = json.dumps([layer, attr, f], sort_keys=True)
                        if key not in seen:
                            seen.add(key)
                            out['regexps'].append({
                                'source': rel, 'layer': layer, 'column': attr, 'function': f,
                                'cases': regexp_cases(path, layer, attr, f, test_inputs),
                            })
                    for g in f.get('functions') or []:
                        walk(attr, g)

                for attr, f in c.items():
                    if attr in SCHEMAS[layer]:
                        walk(attr, f)
    # Key order matters: batch-machine applies a conform's keys in order.
    json.dump(out, sys.stdout, ensure_ascii=False, separators=(',', ':'))
    sys.stdout.write('\n')


main()
