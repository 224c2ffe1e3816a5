<?xml version="1.0" encoding="utf-8" ?>
<ogr:FeatureCollection
     xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
     xsi:schemaLocation="http://ogr.maptools.org/ lake-man-gml.xsd"
     xmlns:ogr="http://ogr.maptools.org/"
     xmlns:gml="http://www.opengis.net/gml">
  <gml:boundedBy>
    <gml:Box>
      <gml:coord><gml:X>-122.2592496871948</gml:X><gml:Y>37.80071373300199</gml:Y></gml:coord>
      <gml:coord><gml:X>-122.2567176818848</gml:X><gml:Y>37.80435890857139</gml:Y></gml:coord>
    </gml:Box>
  </gml:boundedBy>
                                                                                              
  <gml:featureMember>
    <ogr:lake_man fid="lake_man.0">
      <ogr:geometryProperty><gml:Point><gml:coordinates>-122.259249687194824,37.802612637607439</gml:coordinates></gml:Point></ogr:geometryProperty>
      <ogr:MSTRID>964</ogr:MSTRID>
      <ogr:CATEGORY>PRIMARY</ogr:CATEGORY>
      <ogr:ADDRESSID>621850000</ogr:ADDRESSID>
      <ogr:BASEID>40739</ogr:BASEID>
      <ogr:REVDATE>2003/06/12</ogr:REVDATE>
      <ogr:FLOOR>1</ogr:FLOOR>
      <ogr:NUMBER>5115</ogr:NUMBER>
      <ogr:ZIP>80528</ogr:ZIP>
      <ogr:ACTIVE>YES</ogr:ACTIVE>
      <ogr:MAILING>YES</ogr:MAILING>
      <ogr:FENAME>FRUITED PLAINS</ogr:FENAME>
      <ogr:FNAME>FRUITED PLAINS</ogr:FNAME>
      <ogr:FTYPE>LN</ogr:FTYPE>
      <ogr:STRNAME>FRUITED PLAINS LN</ogr:STRNAME>
      <ogr:id>left arm</ogr:id>
    </ogr:lake_man>
  </gml:featureMember>
  <gml:featureMember>
    <ogr:lake_man fid="lake_man.1">
      <ogr:geometryProperty><gml:Point><gml:coordinates>-122.256717681884766,37.80252786612148</gml:coordinates></gml:Point></ogr:geometryProperty>
      <ogr:MSTRID>964</ogr:MSTRID>
      <ogr:CATEGORY>PRIMARY</ogr:CATEGORY>
      <ogr:ADDRESSID>621890000</ogr:ADDRESSID>
      <ogr:BASEID>40861</ogr:BASEID>
      <ogr:REVDATE>2003/06/12</ogr:REVDATE>
      <ogr:FLOOR>1</ogr:FLOOR>
      <ogr:NUMBER>5121</ogr:NUMBER>
      <ogr:ZIP>80528</ogr:ZIP>
      <ogr:ACTIVE>YES</ogr:ACTIVE>
      <ogr:MAILING>YES</ogr:MAILING>
      <ogr:FENAME>FRUITED PLAINS</ogr:FENAME>
      <ogr:FNAME>FRUITED PLAINS</ogr:FNAME>
      <ogr:FTYPE>LN</ogr:FTYPE>
      <ogr:STRNAME>FRUITED PLAINS LN</ogr:STRNAME>
      <ogr:id>right arm</ogr:id>
    </ogr:lake_man>
  </gml:featureMember>
  <gml:featureMember>
    <ogr:lake_man fid="lake_man.2">
      <ogr:geometryProperty><gml:Point><gml:coordinates>-122.257940769195542,37.80296867678598</gml:coordinates></gml:Point></ogr:geometryProperty>
      <ogr:MSTRID>964</ogr:MSTRID>
      <ogr:CATEGORY>PRIMARY</ogr:CATEGORY>
      <ogr:ADDRESSID>621950000</ogr:ADDRESSID>
      <ogr:BASEID>40999</ogr:BASEID>
      <ogr:REVDATE>2003/06/12</ogr:REVDATE>
      <ogr:FLOOR>1</ogr:FLOOR>
      <ogr:NUMBER>5133</ogr:NUMBER>
      <ogr:ZIP>80528</ogr:ZIP>
      <ogr:ACTIVE>YES</ogr:ACTIVE>
      <ogr:MAILING>YES</ogr:MAILING>
      <ogr:FENAME>FRUITED PLAINS</ogr:FENAME>
      <ogr:FNAME>FRUITED PLAINS</ogr:FNAME>
      <ogr:FTYPE>LN</ogr:FTYPE>
      <ogr:STRNAME>FRUITED PLAINS LN</ogr:STRNAME>
      <ogr:id>torso</ogr:id>
    </ogr:lake_man>
  </gml:featureMember>
  <gml:featureMember>
    <ogr:lake_man fid="lake_man.3">
      <ogr:geometryProperty><gml:Point><gml:coordinates>-122.258970737457275,37.800747642440918</gml:coordinates></gml:Point></ogr:geometryProperty>
      <ogr:MSTRID>964</ogr:MSTRID>
      <ogr:CATEGORY>PRIMARY</ogr:CATEGORY>
      <ogr:ADDRESSID>621920000</ogr:ADDRESSID>
      <ogr:BASEID>40891</ogr:BASEID>
      <ogr:REVDATE>2003/06/12</ogr:REVDATE>
      <ogr:FLOOR>1</ogr:FLOOR>
      <ogr:NUMBER>5126</ogr:NUMBER>
      <ogr:ZIP>80528</ogr:ZIP>
      <ogr:ACTIVE>YES</ogr:ACTIVE>
      <ogr:MAILING>YES</ogr:MAILING>
      <ogr:FENAME>FRUITED PLAINS</ogr:FENAME>
      <ogr:FNAME>FRUITED PLAINS</ogr:FNAME>
      <ogr:FTYPE>LN</ogr:FTYPE>
      <ogr:STRNAME>FRUITED PLAINS LN</ogr:STRNAME>
      <ogr:id>left leg</ogr:id>
    </ogr:lake_man>
  </gml:featureMember>
  <gml:featureMember>
    <ogr:lake_man fid="lake_man.4">
      <ogr:geometryProperty><gml:Point><gml:coordinates>-122.256953716278076,37.800713733001992</gml:coordinates></gml:Point></ogr:geometryProperty>
      <ogr:MSTRID>964</ogr:MSTRID>
      <ogr:CATEGORY>PRIMARY</ogr:CATEGORY>
      <ogr:ADDRESSID>621880000</ogr:ADDRESSID>
      <ogr:BASEID>40851</ogr:BASEID>
      <ogr:REVDATE>2003/06/12</ogr:REVDATE>
      <ogr:FLOOR>1</ogr:FLOOR>
      <ogr:NUMBER>5120</ogr:NUMBER>
      <ogr:ZIP>80528</ogr:ZIP>
      <ogr:ACTIVE>YES</ogr:ACTIVE>
      <ogr:MAILING>YES</ogr:MAILING>
      <ogr:FENAME>FRUITED PLAINS</ogr:FENAME>
      <ogr:FNAME>FRUITED PLAINS</ogr:FNAME>
      <ogr:FTYPE>LN</ogr:FTYPE>
      <ogr:STRNAME>FRUITED PLAINS LN</ogr:STRNAME>
      <ogr:id>right leg</ogr:id>
    </ogr:lake_man>
  </gml:featureMember>
  <gml:featureMember>
    <ogr:lake_man fid="lake_man.5">
      <ogr:geometryProperty><gml:Point><gml:coordinates>-122.257640361785889,37.804358908571395</gml:coordinates></gml:Point></ogr:geometryProperty>
      <ogr:MSTRID>1768</ogr:MSTRID>
      <ogr:CATEGORY>PRIMARY</ogr:CATEGORY>
      <ogr:ADDRESSID>621830000</ogr:ADDRESSID>
      <ogr:BASEID>40744</ogr:BASEID>
      <ogr:REVDATE>2003/06/12</ogr:REVDATE>
      <ogr:FLOOR>1</ogr:FLOOR>
      <ogr:NUMBER>5115</ogr:NUMBER>
      <ogr:ZIP>80528</ogr:ZIP>
      <ogr:ACTIVE>YES</ogr:ACTIVE>
      <ogr:MAILING>YES</ogr:MAILING>
      <ogr:FENAME>OLD MILL</ogr:FENAME>
      <ogr:FNAME>OLD MILL</ogr:FNAME>
      <ogr:FTYPE>RD</ogr:FTYPE>
      <ogr:STRNAME>OLD MILL RD</ogr:STRNAME>
      <ogr:id>head</ogr:id>
    </ogr:lake_man>
  </gml:featureMember>
</ogr:FeatureCollection>
