"""scene/names.py: the one "first free name" rule (bpy-free, so it runs in tier 1)."""

from mjblend.scene.names import first_free, numbered


def test_first_free_takes_the_first_candidate_not_taken():
    assert first_free(set(), lambda n: f"class{n}") == "class1"
    assert first_free({"class1", "class2", "class4"}, lambda n: f"class{n}") == "class3"


def test_numbered_keeps_the_stem_first():
    assert first_free(set(), numbered("arm", "_")) == "arm"
    assert first_free({"arm", "arm_2"}, numbered("arm", "_")) == "arm_3"
    assert first_free({"p_plugin"}, numbered("p_plugin")) == "p_plugin2"
