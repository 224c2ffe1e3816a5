<?xml version="1.0" encoding="UTF-8"?>
<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:ingestd="http://ingestd.example/fixture" numberMatched="5" numberReturned="5" timeStamp="2026-01-01T00:00:00Z"><wfs:member><ingestd:points gml:id="x"><ingestd:n>&nope;</ingestd:n></ingestd:points></wfs:member></wfs:FeatureCollection>
