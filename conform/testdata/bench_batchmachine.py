"""Time batch-machine's own row_transform_and_convert on the conform and
the parcels of BenchmarkConformParcels, for comparison: rows/s on one core.

    python3 bench_batchmachine.py BATCH_MACHINE_CHECKOUT [ROWS]

The rows are built the way internal/layertest.Parcels builds them (the
fields the conform reads), as strings, as batch-machine's CSV extract
hands them over.
"""
import os
import sys
import time

bm, rows = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 250000
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bmload import load_conform  # noqa: E402

conform = load_conform(bm)

SCHEMA = conform.ADDRESSES_SCHEMA


class SourceConfig:
    layer = 'addresses'
    SCHEMA = SCHEMA
    data_source = {'fingerprint': '0', 'conform': {
        'number': {'function': 'prefixed_number', 'field': 'site_address'},
        'street': {'function': 'postfixed_street', 'field': 'site_address'},
        'id': {'function': 'regexp', 'field': 'pin', 'pattern': r'^0*(\d+)$'},
        'district': {'function': 'join', 'fields': ['township', 'zoning'], 'separator': ' '},
        'region': {'function': 'regexp', 'field': 'owner', 'pattern': r'^OWNER (\d+)$', 'replace': 'owner $1'},
        'city': 'land_use',
    }}


zonings = ['R-4', 'R-6', 'R-10', 'RX-3', 'OX-4', 'CX-5', 'IX-3', 'DX-12', 'NX-3', 'AP']
land_uses = ['single family', 'multi family', 'commercial', 'industrial', 'vacant', 'institutional']
sc = SourceConfig()
t0 = time.process_time()
for i in range(rows):
    row = {
        'pin': '%010d' % i, 'owner': 'OWNER %d' % (i % 5000), 'site_address': '%d MAIN ST' % (100 + i % 9000),
        'zoning': zonings[i % len(zonings)], 'land_use': land_uses[i % len(land_uses)], 'township': 'T%d' % (i % 20),
        conform.GEOM_FIELDNAME: '',
    }
    conform.row_transform_and_convert(sc, row)
el = time.process_time() - t0
print('batch-machine rows/s per core: %.0f (%d rows, %.1f s CPU)' % (rows / el, rows, el))
