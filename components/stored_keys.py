"""Every key MJBlend keeps in a .blend beside its property groups, in one place,
and the version of that storage format.

Two namings, kept because a renamed key would be lost from every saved file:
keys on MuJoCo property groups (an element's, a model's, an asset's) start
with "_"; keys on Blender's own datablocks (objects, meshes, materials,
images, node groups) start with "mjblend_". A change to what is stored or
how bumps FORMAT and adds the step from the previous format to
`storage_format.MIGRATIONS`, so files saved before it still open.
"""

# The storage format this MJBlend writes; every model root records the one it
# was last saved with (absent: 1, the format of every file saved before the key
# existed). Format 2: a group stores only the attributes it sets itself, floats as
# their exact doubles under the property's own name (values.py); format 1 stored
# every attribute, float32 in the property plus EXACT / SEEN, and OWN
# (components/format1.py turns it into format 2 on load).
FORMAT = 2
FORMAT_KEY = "_format"  # model group: the storage format it was saved in

# (Registered properties are stored by Blender under their own names and need no key
# here; a new one an older file lacks reads as its default, so adding one keeps the
# format. E.g. the domain randomization: `randomize` / `randomize_active` on an
# object's element group, `randomize_seed` on the model group; an entry stores its
# attribute and mode by name: components/randomization.py.)

# ------------------------------------------------- on MuJoCo property groups
# (format 1 only: read by components/format1.py, which removes them)
EXACT = "_exact"  # {prop: doubles}: the exact value of a float attribute as authored
SEEN = "_seen"  # {prop: float32s}: what the Blender property held when EXACT was stored
OWN = "_own"  # [attribute names]: what an element sets itself (not from its default class)
# (format 2)
CLASS_REFS = "_class_refs"  # {prop: 1}: references the element shows from its class (not its own)
REF = "_ref"  # {prop: name}: a reference as authored, for one whose target is gone
LENGTHS_SUFFIX = "_len"  # "_" + prop + this: the row lengths of a ragged array attribute
POSE = "_pose"  # exact authored spatial values (pos, quat, euler, axisangle, ...)
SOURCE = "_source"  # model group: the imported file
SEEN_POSE = "_seen_pose"  # element group: location + quaternion as imported
RESOLVED_PATH = "_resolved_path"  # asset group: the file MuJoCo loaded
SIGNATURE = "_signature"  # mesh / texture asset group: geometry / pixels as imported
DEGREE = "_degree"  # element group: its own compiler's angle unit, where it differs
ANGLE_UNIT = "_angle_degree"  # model group: the unit most angles are written in

# -------------------------------------------------- on Blender's datablocks
ORDER = "mjblend_order"  # object: position in the MJCF file
LOOK = "mjblend_look"  # material / node group: which MuJoCo look it was made for
PACK_ON_SAVE = "mjblend_pack_on_save"  # image: generated pixels to pack when the .blend is saved
TEXCOORD = "mjblend_texcoord"  # mesh: it carries MuJoCo texture coordinates
TEXTURE_ALPHA = "mjblend_texture_alpha"  # material: a texture brings alpha
NODE_GROUP_VERSION = "version"  # node group (the cube-map lookup): which build of it
BAKE = "mjblend_bake"  # action (timeline bake): {scene, object, what it replaced, the authored pose}
RECORDING = "mjblend_recording"  # action (a bake's recording): times, full states, sensors per frame
GROUPS_APPLIED = "mjblend_groups_applied"  # scene: {kind: the group switches its objects last followed}
